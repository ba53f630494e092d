// The owner's side of a group's replica (issue 32; docs/cluster.md,
// "Replicas"): what the group actor keeps to stream its state to its replica
// (actors/group/group_replica.hpp) and to hold each publish's confirmation
// until the replica has the batch.
//
// The stream, numbered by one sequence:
//
//   replica_atom(handle, term)  --> the full state as rsnap chunks (<= 1024
//                                   held messages each), then per handler run:
//   rhold(seq, accepted batch)      the enqueue reply waits for rack(>= seq)
//   rchange(seq, returned keys)     ack_wait passed, nack, member gone
//   rchange(seq, removed keys)      acked, dead-lettered, expired, dropped
//   rchange(seq, delivered keys)    one per dispatch round
//
// Without a replica nothing is recorded: each hook is one branch on
// `replica`, and a publish is confirmed at once.

#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include <caf/typed_response_promise.hpp>

#include "actors/protocol.hpp"

namespace tb {

/// What a group actor keeps for its replica.
struct group_replication {
  /// An enqueue reply waiting for the replica's `rack`.
  struct waiting_reply {
    /// The sequence number of the rhold that carries the batch.
    uint64_t seq = 0;
    /// Messages of the batch the group accepted.
    uint64_t accepted = 0;
    /// Messages in the batch, accepted or not.
    uint32_t size = 0;
    /// The reply, sent once the replica acknowledged `seq`.
    enqueue_reply reply;
    /// Where it goes.
    caf::typed_response_promise<enqueue_reply> promise;
  };

  /// The replica; null: none (replicas = 0, none attached yet, or gone).
  replica_actor replica;
  /// The ownership term the replica was attached at.
  uint64_t term = 0;
  /// The last sequence number sent.
  uint64_t seq = 0;
  /// The last sequence number the replica acknowledged.
  uint64_t acked_seq = 0;
  /// The sequence number of the last chunk of the full state; the replica
  /// is in sync once it acknowledged it.
  uint64_t synced_at = 0;
  /// Enqueue replies waiting for `rack`, oldest first.
  std::deque<waiting_reply> waiting;
  /// Messages accepted in this handler run, not yet sent (rhold).
  std::vector<message_ref> batch;
  /// Keys of messages back from a member in this handler run.
  std::vector<uint64_t> returned;
  /// Keys of messages gone for good in this handler run.
  std::vector<uint64_t> removed;
  /// The sequence number of the rhold sent last.
  uint64_t last_hold_seq = 0;
  /// Messages confirmed without a replica although `replicas > 0`.
  uint64_t confirmed_unreplicated = 0;
  /// Messages of batches refused because their replica was lost before it
  /// acknowledged them (held by the owner all the same: "may or may not").
  uint64_t refused_unacked = 0;
};

} // namespace tb
