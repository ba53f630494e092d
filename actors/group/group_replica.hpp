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

#include <cstdint>
#include <string>

#include <caf/stateful_actor.hpp>

#include "actors/protocol.hpp"

namespace tb {

struct replica_state;

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
