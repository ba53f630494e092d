// Groups across nodes (docs/cluster.md, "Groups across nodes"): the
// router's directory of the cluster's groups.
//
// Each group has one owner node, the only one that runs its actor. Where a
// new group lives is the rendezvous (highest random weight) hash of its
// name over the live nodes, computed by the router asked to create it; an
// existing group stays where it lives. The owner's router tells every peer
// router (`gadd`, `gdel`, and all its groups in `gsync` on peer_up), which
// enter the group in their trie and routes like a local group: publishers
// enqueue straight to the owner's group actor, members join it directly.
//
//   session --join--> router n2 --gcreate(g)--> router n1 (HRW owner of g)
//                                               spawns g, --gadd(g)--> n2, n3
//                     <------------entry (once n2 and n3 applied it)---
//   session <--g---- (join_atom to g itself, across nodes)
//
// CAF 0.17 never completes a request to an actor whose node died: every
// request to a peer's router or to a remote group is kept pending on that
// node's router and failed with node_unavailable when the node goes down.

#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/router/router_actor.hpp"

namespace tb {

/// Returns the rendezvous hash weight of `node` for the group `group`:
/// the same number on every node (FNV-1a and a 64-bit finalizer).
uint64_t hrw_weight(const std::string& node, const std::string& group);

/// True if `a` ranks above `b` for `group` (weight, then name).
bool hrw_beats(const std::string& a, const std::string& b,
               const std::string& group);

/// Returns the live nodes this router knows: itself and every peer its
/// router met (`peer_up`) that is not down.
std::vector<std::string> live_nodes(const router_state& st);

/// Returns the HRW owner of a new group `group` over the live nodes.
std::string hrw_owner(const router_state& st, const std::string& group);

/// Returns the name of the node owning `entry` (this node's if local).
const std::string& owner_of(const router_state& st, const router_group& entry);

/// Returns the directory entry of the group `name`, held in `entry`.
group_entry entry_of(const router_state& st, const std::string& name,
                     const router_group& entry);

/// Returns the group info a directory entry tells (no counters).
group_info info_of_entry(const group_entry& entry);

/// Keeps a request to an actor of the node whose router is `node_router`
/// pending; returns its id (0 and nothing kept for a null router: local).
uint64_t track_pending(router_state& st, const caf::actor_addr& node_router,
                       std::string what,
                       std::function<void(const caf::error&)> fail);

/// Forgets the pending request `id`; true if it was still pending (the
/// answer is the first and counts), always true for id 0.
bool settle_pending(router_state& st, const caf::actor_addr& node_router,
                    uint64_t id);

/// Fails every request pending on the node `node` (its router `addr`) with
/// node_unavailable: CAF would never complete them.
void fail_pending(router_pointer self, const caf::actor_addr& addr,
                  const std::string& node);

/// Sends `(xs...)` to `dest`, an actor of the node whose router is
/// `node_router` (null: this node), and calls `on_value(Result&)` with the
/// answer or `on_error(error)`; if the node goes down first, `on_error`
/// gets node_unavailable naming the node and `what`.
template <class Result, class Handle, class OnValue, class... Ts>
void ask_node(router_pointer self, const caf::actor_addr& node_router,
              std::string what, const Handle& dest, OnValue on_value,
              std::function<void(const caf::error&)> on_error,
              const Ts&... xs) {
  auto id = track_pending(self->state, node_router, std::move(what), on_error);
  self->request(dest, caf::infinite, xs...)
      .then(
          [self, node_router, id, on_value](Result& value) mutable {
            if (settle_pending(self->state, node_router, id))
              on_value(value);
          },
          [self, node_router, id, on_error](caf::error& err) {
            if (settle_pending(self->state, node_router, id))
              on_error(err);
          });
}

/// Sends `(xs...)` to every peer router that got this node's first sync;
/// calls `on_applied()` once per peer when it answered (or went down).
/// Returns the number of peers told.
template <class... Ts>
std::size_t tell_peers(router_pointer self,
                       const std::function<void()>& on_applied,
                       const Ts&... xs) {
  std::size_t told = 0;
  for (auto& [addr, peer] : self->state.peers) {
    if (!peer.sync_sent)
      continue; // its first sync, still to come, has it
    auto id = peer.next_wait++;
    peer.waits.emplace(id, on_applied);
    self->request(peer.router, caf::infinite, xs...)
        .then([self, addr = addr,
               id](caf::ok_atom) { peer_applied(self, addr, id); },
              [self, addr = addr, id](caf::error&) {
                peer_applied(self, addr, id);
              });
    ++told;
  }
  return told;
}

/// Sends the peer every group this node owns (part of its first sync).
void send_owned_groups(router_pointer self, router_peer& peer);

/// Enters a peer's group `entry` (sent by the router `from`) in the
/// directory, the trie and the routes, like a local group, and calls
/// `done()` once every publisher's route has it. Two entries of one name:
/// the higher ownership term wins (a lower one is refused); at equal terms
/// the higher HRW rank keeps it; a losing local group is deleted.
void enter_remote_group(router_pointer self, const caf::actor_addr& from,
                        group_entry entry, std::function<void()> done);

/// A peer router announced a group it owns (`gadd`).
caf::result<caf::ok_atom> take_group_add(router_pointer self,
                                         group_entry& entry);

/// A peer router's group `name` is gone (`gdel`).
void take_group_del(router_pointer self, const std::string& name);

/// A peer router's owned groups (`gsync`, part of the first sync).
caf::result<caf::ok_atom> take_group_sync(router_pointer self,
                                          group_entry_list& entries);

/// This node is the owner asked to create `name` (`gcreate`): answers the
/// group the directory holds (with the same settings, or only the same
/// pattern if `any_settings`), or creates it here.
caf::result<group_entry> take_group_create(router_pointer self,
                                           std::string name,
                                           group_settings settings,
                                           bool any_settings);

/// The node `node` (router `addr`) went down: drops its groups from the
/// directory, the trie and the routes at once, counts and logs them;
/// replicated groups waiting for their replica's takeover stay.
void drop_owner_groups(router_pointer self, const caf::actor_addr& addr,
                       const std::string& node);

/// Answers the directory's counters (Stats: ClusterStats fields 6-9).
directory_stats describe_directory(router_pointer self);

/// Creates the config groups whose HRW owner this node is and that the
/// directory does not hold (after an owner's death).
void create_config_groups(router_pointer self);

/// Spawns a group this node owns, enters it like `spawn_group` and tells
/// every peer; calls `ready(group)` once every local publisher and every
/// live peer has it (router_groups.cpp). A promoted replica's group starts
/// from its `seed` at ownership `term`, in the topics' routes in the place
/// of `replaces` (the old owner's group, forgotten with its routes kept); a
/// group with replicas gets one placed (router_replicas.cpp).
void spawn_owned_group(router_pointer self, const std::string& name,
                       const group_settings& settings, const char* origin,
                       std::function<void(group_actor)> ready,
                       std::shared_ptr<const group_seed> seed = nullptr,
                       uint64_t term = 0, group_actor replaces = {});

/// Returns why `settings` cannot make a group named `name`, or no error
/// (router_groups.cpp).
error_info check_new_group(const router_state& st, const std::string& name,
                           const group_settings& settings);

} // namespace tb
