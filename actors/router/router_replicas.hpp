// Replicas, the router's side (issue 32; docs/cluster.md, "Replicas"):
// where a group's replica lives, who promotes it when the owner's node
// dies, and the ownership terms that refuse an old owner.
//
//   owner router --grepl(g, settings, term, owner)--> replica node's router
//                <------------replica actor----------  (spawns, keeps by g)
//   owner router --replica(handle, term)--> owner group (streams to it)
//                --gadd(g, replica = node)--> every peer
//
//   owner node dies: peer_down at every router
//   replica's router --promote--> replica --group_seed--> router
//                    spawns g from the seed at term + 1, --gadd--> peers,
//                    asks the next node for a new replica
//   other routers keep g's entry (a publish to it fails UNAVAILABLE) until
//                    that gadd replaces it, or drop it after the takeover
//                    timeout (dead_after + 2 s)
//
// Terms: between two entries of one group the higher term wins; a lower one
// is refused (answered ok, ignored, counted, logged once per group); equal
// terms fall back to the two-owner rule (the higher HRW rank keeps it).

#pragma once

#include <string>

#include "actors/router/router_actor.hpp"

namespace tb {

/// Returns the node that should keep the replica of `name`, owned by this
/// node: the live node other than this one ranking highest in the group's
/// HRW order (the HRW second when the owner ranks first); empty if none.
std::string replica_node_for(const router_state& st, const std::string& name);

/// Asks a node for the replica of the owned group `name` if its settings
/// want one and it has none (nor one being asked for).
void place_replica(router_pointer self, const std::string& name);

/// Places a replica of every owned group that wants one and has none.
void place_replicas(router_pointer self);

/// A peer router asks this node to keep a replica of `name` (`grepl`):
/// spawns the replica actor, keeps it by name and answers it.
caf::result<replica_actor> take_replica_request(router_pointer self,
                                                const std::string& name,
                                                const group_settings& settings,
                                                uint64_t term,
                                                const std::string& owner);

/// The node `node` (router `addr`) went down: replicas it kept of groups
/// this node owns are placed again; replicas this node keeps of its groups
/// are promoted; the entries of its replicated groups stay until their new
/// owner's `gadd`, bounded (call before drop_owner_groups).
void replicas_node_down(router_pointer self, const caf::actor_addr& addr,
                        const std::string& node);

/// The remote group `name`'s owner is lost (its proxy went down with its
/// node): true if its replica takes over (the entry stays), false if the
/// group is lost as without replicas.
bool replica_owner_lost(router_pointer self, const std::string& name);

/// The takeover deadline of `name`, whose owner died at `term`, passed: if
/// no new owner replaced it, it is dropped (lost).
void takeover_deadline(router_pointer self, const std::string& name,
                       uint64_t term);

/// The group `name` of the node `owner` is gone (`gdel`): the replica this
/// node keeps of it quits.
void drop_held_replica(router_pointer self, const std::string& name,
                       const std::string& owner);

/// A replica actor of this node ended: forgets it; false if `addr` is none.
bool forget_replica(router_pointer self, const caf::actor_addr& addr);

/// Returns the error of a join to the group `name` whose owner's node is
/// gone while its replica takes over (node_unavailable: retry).
caf::error takeover_error(const std::string& name, const router_group& entry);

/// Returns true if `entry` is refused because the directory holds `name`
/// at a higher term (counted, logged once per group).
bool refuse_stale_entry(router_pointer self, const group_entry& entry,
                        const router_group& held);

} // namespace tb
