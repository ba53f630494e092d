// Values that travel between group actors, sessions and the router.
// Included by actors/protocol.hpp, which registers their type IDs.

#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/serializer.hpp>

#include "actors/message.hpp"
#include "actors/request_types.hpp"
#include "config/broker_config.hpp"
#include "routing/error.hpp"

namespace tb {

/// Serializes group settings (durations as milliseconds).
/// @relates group_settings
template <class Inspector>
typename std::enable_if<Inspector::reads_state,
                        typename Inspector::result_type>::type
inspect(Inspector& f, group_settings& x) {
  auto ack_wait_ms = static_cast<int64_t>(x.ack_wait.count());
  auto overflow = static_cast<uint8_t>(x.overflow);
  auto max_age_ms = static_cast<int64_t>(x.max_age.count());
  auto on_expiry = static_cast<uint8_t>(x.on_expiry);
  auto dedup_window_ms = static_cast<int64_t>(x.dedup_window.count());
  return f(caf::meta::type_name("group_settings"), x.pattern, ack_wait_ms,
           x.max_deliveries, x.max_pending_messages, x.max_pending_bytes,
           overflow, x.dead_letter, x.policy, max_age_ms, on_expiry,
           x.max_priority, dedup_window_ms, x.replicas);
}

/// Deserializes group settings.
/// @relates group_settings
template <class Inspector>
typename std::enable_if<Inspector::writes_state,
                        typename Inspector::result_type>::type
inspect(Inspector& f, group_settings& x) {
  int64_t ack_wait_ms = 0;
  uint8_t overflow = 0;
  int64_t max_age_ms = 0;
  uint8_t on_expiry = 0;
  int64_t dedup_window_ms = 0;
  auto apply = [&]() -> caf::error {
    x.ack_wait = std::chrono::milliseconds{ack_wait_ms};
    x.dedup_window = std::chrono::milliseconds{dedup_window_ms};
    x.overflow = static_cast<overflow_policy>(overflow);
    x.max_age = std::chrono::milliseconds{max_age_ms};
    x.on_expiry = static_cast<expiry_action>(on_expiry);
    return caf::none;
  };
  return f(caf::meta::type_name("group_settings"), x.pattern, ack_wait_ms,
           x.max_deliveries, x.max_pending_messages, x.max_pending_bytes,
           overflow, x.dead_letter, x.policy, max_age_ms, on_expiry,
           x.max_priority, dedup_window_ms, x.replicas,
           caf::meta::load_callback(apply));
}

/// What a session asks for when it joins a group.
struct member_spec {
  /// The subscription id within the session.
  uint64_t subscription_id = 0;
  /// The most unacked deliveries held at once (0: the default, 256).
  uint32_t max_in_flight = 0;
  /// Labels the group's policy may read (`Subscribe.tags`).
  std::vector<std::string> tags;
  /// The member session's peer address, for the Stats view.
  std::string peer;
  /// The name its client chose (empty if none), for the Stats view.
  std::string client_name;
  /// The name of its session's token (empty with auth off), for the Stats
  /// view.
  std::string token;
};

/// @relates member_spec
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, member_spec& x) {
  return f(caf::meta::type_name("member_spec"), x.subscription_id,
           x.max_in_flight, x.tags, x.peer, x.client_name, x.token);
}

/// One delivery attempt of a held message to one group member.
struct group_delivery {
  /// The message.
  message_ref message;
  /// The member's subscription id within its session.
  uint64_t subscription_id = 0;
  /// Unique per attempt; the member answers with it.
  uint64_t delivery_id = 0;
  /// 1 on first delivery.
  uint32_t attempt = 1;
  /// Requests only: where the reply goes.
  reply_target reply;
};

/// @relates group_delivery
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_delivery& x) {
  return f(caf::meta::type_name("group_delivery"), x.message, x.subscription_id,
           x.delivery_id, x.attempt, x.reply);
}

/// The deliveries one dispatch round of a group makes to one session.
struct group_delivery_batch {
  /// The deliveries, in the group's order.
  std::vector<group_delivery> items;
};

/// Writes `x` for another node: its count, then per delivery one run of
/// raw bytes (subscription id, delivery id, attempt, and whether a reply
/// target follows), its message's record (`message_record::save`), and its
/// reply target only for a request. Not a field at a time: CAF's
/// serializer makes and destroys an error per field, the largest cost of a
/// delivery crossing nodes after the message itself (docs/cluster.md).
caf::error save_deliveries(caf::serializer& sink, group_delivery_batch& x);

/// Reads what `save_deliveries` wrote into `x`; an error (a truncated or
/// malformed buffer) leaves `x` empty.
caf::error load_deliveries(caf::deserializer& source, group_delivery_batch& x);

/// @relates group_delivery_batch
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_delivery_batch& x) {
  if constexpr (std::is_base_of_v<caf::serializer, Inspector>) {
    return save_deliveries(f, x);
  } else if constexpr (std::is_base_of_v<caf::deserializer, Inspector>) {
    return load_deliveries(f, x);
  } else {
    // Other inspectors (to_string): field by field.
    return f(caf::meta::type_name("group_delivery_batch"), x.items);
  }
}

/// A group's answer to a batch of messages routed to it.
struct enqueue_reply {
  /// Positions (in the batch) of the messages the group refused.
  std::vector<uint32_t> refused;
  /// Why, naming the group and the bound; empty if nothing was refused.
  std::string reason;
  /// The refusal's code: `group_full`, or `node_unavailable` for a batch
  /// whose replica was lost before it acknowledged it (issue 32).
  ec code = ec::group_full;
};

/// @relates enqueue_reply
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, enqueue_reply& x) {
  auto code = static_cast<uint8_t>(x.code);
  auto apply = [&]() -> caf::error {
    x.code = static_cast<ec>(code);
    return caf::none;
  };
  return f(caf::meta::type_name("enqueue_reply"), x.refused, x.reason, code,
           caf::meta::load_callback(apply));
}

/// A group's counters (spec 11).
struct group_counters {
  /// Held and not in flight (including delayed redeliveries).
  uint64_t pending = 0;
  /// Delivered and not yet answered.
  uint64_t in_flight = 0;
  /// Members that receive new deliveries.
  uint64_t members = 0;
  /// Messages the group accepted.
  uint64_t received = 0;
  /// Deliveries made, first attempts and redeliveries.
  uint64_t delivered = 0;
  /// Messages acked.
  uint64_t acked = 0;
  /// Redeliveries made.
  uint64_t redelivered = 0;
  /// Messages sent to the dead letter topic.
  uint64_t dead_lettered = 0;
  /// Messages dropped (drop_oldest, or dead_letter = "none").
  uint64_t dropped = 0;
  /// Messages refused because the group was full (overflow = reject).
  uint64_t refused = 0;
  /// Answers ignored: unknown, late, superseded or another session's.
  uint64_t stale_answers = 0;
  /// Payload, header and key bytes held.
  uint64_t held_bytes = 0;
  /// Age of the oldest message held and not in flight, in milliseconds.
  uint64_t oldest_pending_age_ms = 0;
  /// Messages received per second over the last full second.
  double received_per_second_1s = 0;
  /// Messages received per second over the last ten full seconds.
  double received_per_second_10s = 0;
  /// Messages acked per second over the last full second.
  double acked_per_second_1s = 0;
  /// Messages acked per second over the last ten full seconds.
  double acked_per_second_10s = 0;
  /// Deliveries that passed ack_wait unanswered.
  uint64_t expired = 0;
  /// Members marked stalled (counted in `members` too).
  uint64_t stalled_members = 0;
  /// Messages that expired while waiting (TTL or max_age), dead-lettered or
  /// dropped per `on_expiry`.
  uint64_t expired_ttl = 0;
  /// Messages held apart until their due time (counted in `pending` too).
  uint64_t scheduled = 0;
  /// When the earliest scheduled message falls due, Unix milliseconds; 0
  /// when none is scheduled.
  int64_t next_due_unix_ms = 0;
};

/// @relates group_counters
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_counters& x) {
  return f(caf::meta::type_name("group_counters"), x.pending, x.in_flight,
           x.members, x.received, x.delivered, x.acked, x.redelivered,
           x.dead_lettered, x.dropped, x.refused, x.stale_answers, x.held_bytes,
           x.oldest_pending_age_ms, x.received_per_second_1s,
           x.received_per_second_10s, x.acked_per_second_1s,
           x.acked_per_second_10s, x.expired, x.stalled_members, x.expired_ttl,
           x.scheduled, x.next_due_unix_ms);
}

/// One member of a group as the Stats view shows it.
struct member_stats {
  /// The member session's peer address.
  std::string peer;
  /// The subscription id within that session.
  uint64_t subscription_id = 0;
  /// Deliveries awaiting its answer.
  uint64_t in_flight = 0;
  /// The most unacked deliveries it holds at once.
  uint64_t max_in_flight = 0;
  /// Its acks, nacks and rejects.
  uint64_t acks = 0;
  /// Its nacks.
  uint64_t nacks = 0;
  /// Its rejects.
  uint64_t rejects = 0;
  /// Milliseconds since its oldest unanswered delivery was made (or last
  /// extended by InProgress); 0 when none.
  uint64_t oldest_in_flight_age_ms = 0;
  /// False once it left while still holding deliveries.
  bool active = true;
  /// True while it is stalled: its deliveries expired `stall_after` times in
  /// a row and its session has not answered since; it gets no new ones.
  bool stalled = false;
  /// Its deliveries that passed ack_wait unanswered.
  uint64_t expired = 0;
  /// The name its client chose (empty if none).
  std::string client_name;
  /// The name of its session's token (empty with auth off).
  std::string token;
};

/// @relates member_stats
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, member_stats& x) {
  return f(caf::meta::type_name("member_stats"), x.peer, x.subscription_id,
           x.in_flight, x.max_in_flight, x.acks, x.nacks, x.rejects,
           x.oldest_in_flight_age_ms, x.active, x.stalled, x.expired,
           x.client_name, x.token);
}

/// A group as listed: name, settings, counters.
struct group_info {
  /// The group's name.
  std::string name;
  /// Its settings, defaults filled in.
  group_settings settings;
  /// Its counters.
  group_counters counters;
  /// Its members, in join order (filled for Stats only).
  std::vector<member_stats> members;
  /// Messages waiting in the group actor's mailbox.
  uint64_t mailbox = 0;
  /// The node that owns the group (cluster; the router fills it in, empty
  /// on a node alone).
  std::string owner_node;
  /// The node keeping its replica (issue 32; the router fills it in, empty
  /// if none).
  std::string replica_node;
  /// Its ownership term (the router fills it in): +1 per takeover.
  uint64_t term = 0;
  /// True if the group's replica has its full state (issue 32).
  bool replica_synced = false;
  /// Accepted batches waiting for the replica's acknowledgement.
  uint64_t replica_unacked = 0;
  /// Messages confirmed without a replica although `replicas > 0`.
  uint64_t confirmed_unreplicated = 0;
};

/// @relates group_info
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_info& x) {
  return f(caf::meta::type_name("group_info"), x.name, x.settings, x.counters,
           x.members, x.mailbox, x.owner_node, x.replica_node, x.term,
           x.replica_synced, x.replica_unacked, x.confirmed_unreplicated);
}

} // namespace tb
