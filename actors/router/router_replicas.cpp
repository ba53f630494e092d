// Replicas, the router's side (issue 32; docs/cluster.md, "Replicas"):
// placing a group's replica on the next node in HRW order, promoting it
// when the owner's node dies, and refusing directory entries of an older
// ownership term. See router_replicas.hpp for the message flow.

#include "actors/router/router_replicas.hpp"

#include <chrono>
#include <memory>
#include <vector>

#include "actors/group/group_replica.hpp"
#include "actors/router/router_directory.hpp"
#include "log/log.hpp"

namespace tb {

namespace {

// Stops the replica `handle` this node keeps of `name` and forgets it.
void router_replicas_stop(router_pointer self, const std::string& name) {
  auto& st = self->state;
  auto i = st.replicas.find(name);
  if (i == st.replicas.end())
    return;
  auto handle = i->second.handle;
  st.replicas.erase(i);
  st.replica_names.erase(handle.address());
  self->demonitor(handle.address());
  // Linked: its exit message is ignored (it stays in linked_children).
  self->send_exit(handle, caf::exit_reason::user_shutdown);
}

// Promotes the replica this node keeps of `name`: it answers the group's
// state and quits; the group starts here from it at the next term, every
// peer is told, and a new replica is placed.
void router_replicas_promote(router_pointer self, const std::string& name) {
  auto& st = self->state;
  auto i = st.replicas.find(name);
  if (i == st.replicas.end())
    return;
  auto held = i->second;
  auto term = held.term;
  if (auto g = st.groups.find(name); g != st.groups.end())
    term = std::max(term, g->second.term);
  auto started = std::chrono::steady_clock::now();
  log::warn("owner node gone: promoting this node's replica of the group",
            {{"group", name}, {"owner", held.owner}, {"term", term + 1}});
  self->request(held.handle, caf::infinite, promote_atom_v)
      .then(
          [self, name, term, held, started](group_seed& seed) {
            auto& st = self->state;
            auto settings =
                seed.settings.pattern.empty() ? held.settings : seed.settings;
            group_actor replaces;
            if (auto g = st.groups.find(name); g != st.groups.end()) {
              auto& entry = g->second;
              if (entry.owner.empty() || entry.term > term) {
                log::warn("replica not promoted: the group has a newer owner",
                          {{"group", name}, {"owner", owner_of(st, entry)}});
                return;
              }
              // The new group takes the old one's place in the routes.
              if (entry.settings.pattern == settings.pattern)
                replaces = entry.handle;
              forget_group(self, entry.handle.address(),
                           static_cast<bool>(replaces));
            }
            ++st.promotions;
            auto held_count = seed.items.size();
            auto ptr = std::make_shared<const group_seed>(std::move(seed));
            spawn_owned_group(
                self, name, settings, "promoted",
                [name, term, started, held_count](const group_actor&) {
                  auto took =
                      std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - started);
                  log::info(
                      "replica promoted: every live router has the "
                      "group's new owner",
                      {{"group", name},
                       {"term", term + 1},
                       {"held", static_cast<uint64_t>(held_count)},
                       {"takeover_us", static_cast<uint64_t>(took.count())}});
                },
                ptr, term + 1, std::move(replaces));
          },
          [self, name](caf::error& err) {
            auto& st = self->state;
            log::warn("replica not promoted: what the group held is lost",
                      {{"group", name}, {"error", to_string(err)}});
            auto g = st.groups.find(name);
            if (g != st.groups.end() && g->second.owner_lost) {
              ++st.groups_lost;
              forget_group(self, g->second.handle.address());
              create_config_groups(self);
            }
          });
}

} // namespace

std::string replica_node_for(const router_state& st, const std::string& name) {
  std::string best;
  for (auto& node : live_nodes(st))
    if (node != st.node_name && (best.empty() || hrw_beats(node, best, name)))
      best = node;
  return best;
}

void place_replica(router_pointer self, const std::string& name) {
  auto& st = self->state;
  auto i = st.groups.find(name);
  if (i == st.groups.end() || st.node_name.empty())
    return;
  auto& entry = i->second;
  if (!entry.owner.empty() || entry.settings.replicas == 0 ||
      !entry.replica.empty() || entry.placing)
    return;
  auto node = replica_node_for(st, name);
  auto addr = st.peer_names.find(node);
  if (node.empty() || addr == st.peer_names.end())
    return; // placed at the next peer_up
  auto peer = st.peers.find(addr->second);
  if (peer == st.peers.end() || !peer->second.router)
    return;
  entry.placing = true;
  auto term = entry.term;
  auto group = entry.handle;
  ask_node<replica_actor>(
      self, addr->second, "the replica of group \"" + name + "\"",
      peer->second.router,
      [self, name, node, term, group](replica_actor& replica) {
        auto& st = self->state;
        auto i = st.groups.find(name);
        if (i == st.groups.end() || !i->second.owner.empty() ||
            i->second.handle != group || i->second.term != term) {
          self->send_exit(replica, caf::exit_reason::user_shutdown);
          return; // the group is gone or changed meanwhile
        }
        auto& entry = i->second;
        entry.placing = false;
        if (st.peer_names.count(node) == 0) {
          place_replica(self, name); // its node went down meanwhile
          return;
        }
        entry.replica = node;
        self->send(entry.handle, replica_atom_v, replica, term);
        log::info("group replica placed",
                  {{"group", name}, {"replica", node}, {"term", term}});
        tell_peers(self, std::function<void()>{}, gadd_atom_v,
                   entry_of(st, name, entry));
      },
      [self, name, node, group](const caf::error& err) {
        auto& st = self->state;
        auto i = st.groups.find(name);
        if (i == st.groups.end() || i->second.handle != group)
          return;
        i->second.placing = false;
        log::warn("group replica not placed",
                  {{"group", name}, {"node", node}, {"error", to_string(err)}});
        if (st.peer_names.count(node) == 0)
          place_replica(self, name); // it went down: the next node
      },
      grepl_atom_v, name, entry.settings, term, st.node_name);
}

void place_replicas(router_pointer self) {
  std::vector<std::string> names;
  for (auto& [name, entry] : self->state.groups)
    if (entry.owner.empty() && entry.settings.replicas > 0 &&
        entry.replica.empty())
      names.push_back(name);
  for (auto& name : names)
    place_replica(self, name);
}

caf::result<replica_actor> take_replica_request(router_pointer self,
                                                const std::string& name,
                                                const group_settings& settings,
                                                uint64_t term,
                                                const std::string& owner) {
  auto& st = self->state;
  if (st.node_name.empty() || owner == st.node_name)
    return make_caf_error(ec::invalid_request,
                          "the replica of group \"" + name +
                              "\" belongs on another node than its owner " +
                              owner);
  // An old owner asking (its term is behind this node's): refused, so the
  // current owner's replica stays.
  uint64_t known = 0;
  if (auto g = st.groups.find(name); g != st.groups.end())
    known = g->second.term;
  if (auto r = st.replicas.find(name); r != st.replicas.end())
    known = std::max(known, r->second.term);
  if (term < known) {
    ++st.stale_entries_refused;
    return make_caf_error(ec::invalid_request,
                          "the replica of group \"" + name + "\" at term " +
                              std::to_string(term) + " is refused: " +
                              std::to_string(known) + " is current");
  }
  // Asked again (a new term, or the owner attaches anew): the old copy goes.
  router_replicas_stop(self, name);
  // Linked: it stops with the router.
  auto replica = self->spawn<caf::linked>(replica_actor_impl, name, owner);
  st.linked_children.insert(replica.address());
  self->monitor(replica);
  st.replicas.insert_or_assign(name,
                               held_replica{replica, owner, term, settings});
  st.replica_names.insert_or_assign(replica.address(), name);
  log::info("keeping a group's replica",
            {{"group", name}, {"owner", owner}, {"term", term}});
  return replica;
}

void replicas_node_down(router_pointer self, const caf::actor_addr& addr,
                        const std::string& node) {
  auto& st = self->state;
  // Owned groups whose replica it kept: the next node keeps one.
  std::vector<std::string> names;
  for (auto& [name, entry] : st.groups)
    if (entry.owner.empty() && !node.empty() && entry.replica == node)
      names.push_back(name);
  for (auto& name : names) {
    auto& entry = st.groups.at(name);
    log::warn("replica node gone: the group's replica is placed again",
              {{"group", name}, {"node", node}});
    entry.replica.clear();
    self->send(entry.handle, replica_atom_v, replica_actor{}, entry.term);
    tell_peers(self, std::function<void()>{}, gadd_atom_v,
               entry_of(st, name, entry));
    place_replica(self, name);
  }
  // Its groups: kept while their replica takes over.
  names.clear();
  for (auto& [name, entry] : st.groups)
    if (!entry.owner.empty() && entry.owner_router == addr)
      names.push_back(name);
  for (auto& name : names)
    replica_owner_lost(self, name);
  // Replicas of its groups the directory does not name it the owner of.
  names.clear();
  for (auto& [name, held] : st.replicas)
    if (held.owner == node)
      names.push_back(name);
  for (auto& name : names) {
    auto g = st.groups.find(name);
    if (g == st.groups.end())
      router_replicas_promote(self, name); // its gadd never came: promote
    else if (g->second.owner.empty() || g->second.owner != node)
      router_replicas_stop(self, name); // stale: another owner took it
  }
}

bool replica_owner_lost(router_pointer self, const std::string& name) {
  auto& st = self->state;
  auto i = st.groups.find(name);
  if (i == st.groups.end() || i->second.owner.empty())
    return false;
  auto& entry = i->second;
  if (entry.owner_lost)
    return true;
  auto held = st.replicas.find(name);
  bool here = held != st.replicas.end() && held->second.owner == entry.owner;
  bool elsewhere = !entry.replica.empty() && entry.replica != st.node_name &&
                   st.peer_names.count(entry.replica) != 0;
  if (!here && !elsewhere)
    return false; // no replica lives: lost as without replicas
  entry.owner_lost = true;
  log::warn("group's owner node gone: its entry stays until the replica "
            "takes over",
            {{"group", name},
             {"owner", entry.owner},
             {"replica", here ? st.node_name : entry.replica},
             {"term", entry.term}});
  self->delayed_send(self, st.takeover_timeout, replica_atom_v, name,
                     entry.term);
  // Without a majority the owner may live on the other side of a partition:
  // a promotion here would make a second owner at a higher term, whose
  // entry wins when the sides meet and drops what the owner confirmed
  // meanwhile. It waits for the takeover deadline (re-armed until then).
  if (here && st.session_ctx.quorum->read().has_quorum)
    router_replicas_promote(self, name);
  else if (here)
    log::warn("replica not promoted yet: this node sees no majority",
              {{"group", name}, {"owner", entry.owner}});
  return true;
}

void takeover_deadline(router_pointer self, const std::string& name,
                       uint64_t term) {
  auto& st = self->state;
  auto i = st.groups.find(name);
  if (i == st.groups.end() || !i->second.owner_lost || i->second.term != term)
    return; // a new owner replaced it
  if (!st.session_ctx.quorum->read().has_quorum) {
    // Without a majority this node cannot tell a slow takeover from one on
    // the other side of a partition: the entry stays, so that publishes to
    // the group are refused (no_quorum), not routed nowhere and confirmed.
    self->delayed_send(self, st.takeover_timeout, replica_atom_v, name, term);
    return;
  }
  // A replica held here whose promotion waited for a majority: now.
  auto held = st.replicas.find(name);
  if (held != st.replicas.end() && held->second.owner == i->second.owner) {
    router_replicas_promote(self, name);
    return;
  }
  log::warn(
      "group lost: its replica did not take over in time",
      {{"group", name},
       {"owner", i->second.owner},
       {"timeout_ms", static_cast<uint64_t>(st.takeover_timeout.count())}});
  ++st.groups_lost;
  forget_group(self, i->second.handle.address());
  create_config_groups(self);
}

void drop_held_replica(router_pointer self, const std::string& name,
                       const std::string& owner) {
  auto& st = self->state;
  auto i = st.replicas.find(name);
  if (i == st.replicas.end() || i->second.owner != owner)
    return;
  log::info("group deleted: its replica here quits",
            {{"group", name}, {"owner", owner}});
  router_replicas_stop(self, name);
}

bool forget_replica(router_pointer self, const caf::actor_addr& addr) {
  auto& st = self->state;
  auto i = st.replica_names.find(addr);
  if (i == st.replica_names.end())
    return false;
  if (auto r = st.replicas.find(i->second);
      r != st.replicas.end() && r->second.handle.address() == addr)
    st.replicas.erase(r);
  st.replica_names.erase(i);
  return true;
}

caf::error takeover_error(const std::string& name, const router_group& entry) {
  return make_caf_error(ec::node_unavailable,
                        "the node " + entry.owner + " that owns group \"" +
                            name + "\" is gone; its replica on " +
                            entry.replica + " is taking over (retry)");
}

bool refuse_stale_entry(router_pointer self, const group_entry& entry,
                        const router_group& held) {
  auto& st = self->state;
  if (entry.term >= held.term)
    return false;
  ++st.stale_entries_refused;
  if (st.stale_logged.insert(entry.name).second)
    log::warn("stale group entry refused: an older ownership term (logged "
              "once per group)",
              {{"group", entry.name},
               {"from", entry.owner},
               {"term", entry.term},
               {"held_owner", owner_of(st, held)},
               {"held_term", held.term}});
  return true;
}

} // namespace tb
