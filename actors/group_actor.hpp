// A consumer group: holds every message matching its pattern until a member
// acks it, handing each to exactly one member at a time (spec 6).
//
// A delivery's life:
//
//   held --dispatch--> in flight --ack--> done
//     ^                   |  |  \--reject / max_deliveries--> dead letter
//     |                   |  \--nack (delay)--> parked --due--+
//     +---- ack_wait passed / member gone / nack -------------+
//
// Members are picked round robin among those with free credit
// (max_in_flight). One periodic tick sweeps deadlines and delays; no timer
// per message.

#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "actors/broker_context.hpp"
#include "actors/group_ledger.hpp"
#include "actors/protocol.hpp"

namespace tb {

/// What every group actor needs from the broker.
struct group_context {
  /// Gives dead letters their message ids.
  std::shared_ptr<id_sequence> message_ids = std::make_shared<id_sequence>();
  /// Gives deliveries their ids, unique per attempt across the broker.
  std::shared_ptr<id_sequence> delivery_ids = std::make_shared<id_sequence>();
  /// The publisher that routes dead letters.
  session_actor dead_letters;
  /// The most unacked deliveries one member may hold, whatever it asks.
  uint32_t max_in_flight_limit = 65536;
};

/// One member of a group: a subscription of a session.
struct group_member {
  /// The member's session.
  session_actor session;
  /// The subscription id within that session.
  uint64_t subscription_id = 0;
  /// The most unacked deliveries it holds at once.
  uint32_t max_in_flight = 256;
  /// Its unacked deliveries.
  uint32_t in_flight = 0;
  /// False once it left: no new deliveries, but it may still answer.
  bool active = true;
};

/// State of a group actor.
struct group_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.group";

  /// The group's name.
  std::string group;
  /// The settings, defaults filled in.
  group_settings settings;
  /// Broker-wide handles and counters.
  group_context ctx;
  /// Held messages, deliveries in flight, deadlines.
  group_ledger ledger;
  /// Members by key.
  std::unordered_map<uint64_t, group_member> members;
  /// Member keys in join order: the round-robin rotation.
  std::vector<uint64_t> rotation;
  /// Where the rotation continues.
  std::size_t next_in_rotation = 0;
  /// The next member key.
  uint64_t next_member_key = 1;
  /// True while a tick is scheduled.
  bool tick_scheduled = false;
  /// Counters.
  group_counters counters;
};

/// The group's handle type with its state.
using group_pointer = group_actor::stateful_pointer<group_state>;

/// Runs the group `name` with `settings` (defaults filled in).
group_actor::behavior_type group_actor_impl(group_pointer self,
                                            std::string name,
                                            group_settings settings,
                                            group_context ctx);

/// Returns the dead letter topic of a group: its `dead_letter` setting, or
/// `$dlq.<name>` when that is empty.
std::string dead_letter_topic(const std::string& name,
                              const group_settings& settings);

} // namespace tb
