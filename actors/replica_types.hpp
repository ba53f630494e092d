// Values that travel between a group's owner and its replica on another node
// (issue 32; docs/cluster.md, "Replicas"). Included by actors/protocol.hpp,
// which registers their type IDs.
//
//   owner group --rsnap (chunks)--> replica     full state, when attached
//               --rhold(seq, msgs)-->           an accepted batch
//               --rchange(seq, change)-->       delivered / returned / removed
//               --rsettings(seq, settings)-->
//               <--rack(seq)--                  applied up to seq
//   router --promote--> replica: hands its state over (group_seed) and quits
//
// Keys: the owner numbers the messages it accepts 1, 2, 3... in acceptance
// order (`replica_item::key`); the replica numbers the batches of rhold the
// same way, so a change names messages by key without sending them again.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include "actors/message.hpp"
#include "config/broker_config.hpp"

namespace tb {

/// One held message as a replica keeps it.
struct replica_item {
  /// The owner's number for it (acceptance order, from 1).
  uint64_t key = 0;
  /// The message.
  message_ref message;
  /// Deliveries made so far.
  uint32_t attempts = 0;
  /// True while a delivery of it is unanswered.
  bool in_flight = false;
};

/// @relates replica_item
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_item& x) {
  return f(caf::meta::type_name("replica_item"), x.key, x.message, x.attempts,
           x.in_flight);
}

/// One piece of the owner's full state, sent when a replica attaches; the
/// first resets the replica, changes follow the last.
struct replica_chunk {
  /// The sequence number of the owner's stream this chunk stands at.
  uint64_t seq = 0;
  /// The group's settings.
  group_settings settings;
  /// Held messages in the order the group holds them.
  std::vector<replica_item> items;
  /// The key the owner gives its next accepted message.
  uint64_t next_key = 1;
  /// True for the first chunk (the replica forgets what it had).
  bool first = false;
  /// True for the last chunk (the replica is in sync after it).
  bool last = false;
};

/// @relates replica_chunk
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_chunk& x) {
  return f(caf::meta::type_name("replica_chunk"), x.seq, x.settings, x.items,
           x.next_key, x.first, x.last);
}

/// What happened to some held messages at the owner.
enum class replica_change_kind : uint8_t {
  /// Delivered to a member: attempts + 1, in flight.
  delivered = 0,
  /// Back from a member (timeout, nack, member gone): no longer in flight.
  returned = 1,
  /// Gone for good: acked, dead-lettered, expired or dropped.
  removed = 2,
};

/// A change of the owner's state the replica applies, in stream order.
struct replica_change {
  /// What happened.
  replica_change_kind kind = replica_change_kind::delivered;
  /// The keys of the messages it happened to.
  std::vector<uint64_t> keys;
};

/// @relates replica_change
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_change& x) {
  auto kind = static_cast<uint8_t>(x.kind);
  auto apply = [&]() -> caf::error {
    x.kind = static_cast<replica_change_kind>(kind);
    return caf::none;
  };
  return f(caf::meta::type_name("replica_change"), kind, x.keys,
           caf::meta::load_callback(apply));
}

/// What a promoted replica hands its router to start the new owner from.
struct group_seed {
  /// The group's settings as the old owner last sent them.
  group_settings settings;
  /// Held messages in the order the group held them; those in flight are
  /// held again at once, their attempt counted.
  std::vector<replica_item> items;
  /// The key the new owner gives its next accepted message.
  uint64_t next_key = 1;
};

/// @relates group_seed
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_seed& x) {
  return f(caf::meta::type_name("group_seed"), x.settings, x.items, x.next_key);
}

/// A replica's counters, for Stats and the directory.
struct replica_stats {
  /// The group's name.
  std::string group;
  /// The owner's node.
  std::string owner;
  /// Messages held.
  uint64_t held = 0;
  /// Payload bytes held.
  uint64_t bytes = 0;
  /// The last sequence number applied.
  uint64_t applied_seq = 0;
  /// True once the owner's full state arrived.
  bool synced = false;
};

/// @relates replica_stats
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_stats& x) {
  return f(caf::meta::type_name("replica_stats"), x.group, x.owner, x.held,
           x.bytes, x.applied_seq, x.synced);
}

} // namespace tb
