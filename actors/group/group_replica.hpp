// A group's replica (issue 32; docs/cluster.md, "Replicas"): the copy of a
// group's held messages on another node than its owner's.
//
// The owner's group actor streams what the replica needs after a failover
// (actors/replica_types.hpp): its full state when the replica attaches, then
// each accepted batch (rhold), each delivery, return and removal (rchange)
// and each settings change, numbered by a sequence the replica answers with
// `rack`. The owner confirms a publish once the replica acknowledged the
// batch that holds it. The replica never delivers. When the owner's node
// dies, its router sends `promote`: the replica answers its state
// (group_seed) and quits; the router starts the new owner from it.

#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include <caf/stateful_actor.hpp>

#include "actors/protocol.hpp"

namespace tb {

/// The messages a replica holds, in the owner's acceptance order (keys
/// ascending). Plain C++, no actors. 24 bytes per held message (one
/// `replica_item` in a deque, the message shared, never copied): a removed
/// message leaves a hole (null message) found by binary search and reclaimed
/// at the front at once, elsewhere when holes outnumber the live items
/// (amortized O(1) per removal).
class replica_book {
public:
  /// Forgets everything.
  void clear();

  /// Holds `item` behind the others; its key must exceed theirs (else it
  /// is refused and false returned).
  bool add(replica_item item);

  /// Returns the held item with `key`, or null.
  replica_item* find(uint64_t key);

  /// Forgets the item with `key`; false if it was not held.
  bool remove(uint64_t key);

  /// Returns how many messages are held.
  std::size_t size() const noexcept {
    return live_;
  }

  /// Returns the payload bytes (with topic, key and headers) held.
  uint64_t bytes() const noexcept {
    return bytes_;
  }

  /// Returns the slots in the deque, holes included (bounded by twice the
  /// live items plus `compact_floor`).
  std::size_t slots() const noexcept {
    return items_.size();
  }

  /// Returns the held items in order.
  std::vector<replica_item> items() const;

  /// Holes tolerated before a compaction is considered.
  static constexpr std::size_t compact_floor = 1024;

private:
  void compact();

  std::deque<replica_item> items_;
  std::size_t live_ = 0;
  uint64_t bytes_ = 0;
};

/// State of a replica actor.
struct replica_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.replica";

  /// The group's name.
  std::string group;
  /// The owner's node.
  std::string owner_node;
  /// The owner's group actor: the sender of the first rsnap.
  caf::actor_addr owner;
  /// The group's settings as the owner last sent them.
  group_settings settings;
  /// The held messages.
  replica_book book;
  /// The key the owner gives its next accepted message.
  uint64_t next_key = 1;
  /// The last sequence number applied; 0 before the first rsnap.
  uint64_t applied_seq = 0;
  /// True once a first rsnap arrived.
  bool attached = false;
  /// True once the last chunk of the owner's full state arrived.
  bool synced = false;
  /// Messages refused (out of sequence, before the first rsnap, from
  /// another actor than the owner).
  uint64_t ignored = 0;
};

/// The replica's handle type with its state.
using replica_pointer = replica_actor::stateful_pointer<replica_state>;

/// Runs the replica of the group `group`, owned by a group actor on the node
/// `owner_node`; the owner is the sender of the first `rsnap`. Quits when
/// the owner ends normally (the group was deleted); when the owner's node
/// dies it waits for its router's `promote`.
replica_actor::behavior_type replica_actor_impl(replica_pointer self,
                                                std::string group,
                                                std::string owner_node);

} // namespace tb
