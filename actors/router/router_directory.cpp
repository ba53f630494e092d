// Groups across nodes (docs/cluster.md, "Groups across nodes"): where a
// group lives (HRW), the directory entries of the peers' groups, the
// requests pending on a peer node, and what a peer's death costs.

#include "actors/router/router_directory.hpp"

#include <limits>
#include <string_view>

#include "actors/router/router_replicas.hpp"
#include "log/log.hpp"
#include "routing/pattern.hpp"

namespace tb {

namespace {

// FNV-1a over `text`, continuing from `hash`.
uint64_t directory_fnv(std::string_view text, uint64_t hash) {
  for (auto c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

// A 64-bit finalizer (splitmix64's): spreads FNV's weak low bits.
uint64_t directory_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// Drops the local group `name`, which lost a two-owner conflict to the one
// `winner` owns (or to a newer ownership term): out of the routes at once,
// or, with `replaced_in_routes`, left there for the caller's `add_group` to
// replace in one route version (returning its handle); then deleted, its
// members told to re-join (they then join the winner's group).
group_actor drop_conflicting_group(router_pointer self, const std::string& name,
                                   const std::string& winner, bool newer_term,
                                   bool replaced_in_routes) {
  auto& st = self->state;
  auto i = st.groups.find(name);
  if (i == st.groups.end())
    return {};
  auto handle = i->second.handle;
  forget_group(self, handle.address(), replaced_in_routes);
  // Publishes waiting for its replica are refused, not confirmed: the
  // winner holds the group now, and this copy goes.
  self->send(handle, replica_atom_v, replica_actor{},
             std::numeric_limits<uint64_t>::max());
  self->request(handle, caf::infinite, delete_atom_v, replaced_atom_v)
      .then(
          [name, winner, newer_term](uint64_t dropped) {
            log::warn(
                newer_term ? "group dropped: another node owns it at a newer "
                             "ownership term (a replica took over)"
                           : "group dropped: another node owns it (two owners "
                             "of one name, the higher HRW rank keeps it)",
                {{"group", name}, {"owner", winner}, {"dropped", dropped}});
          },
          [](caf::error&) {});
  return replaced_in_routes ? handle : group_actor{};
}

} // namespace

uint64_t hrw_weight(const std::string& node, const std::string& group) {
  auto hash = directory_fnv(node, 14695981039346656037ull);
  hash = directory_fnv(std::string_view{"\0", 1}, hash);
  return directory_mix(directory_fnv(group, hash));
}

bool hrw_beats(const std::string& a, const std::string& b,
               const std::string& group) {
  auto x = hrw_weight(a, group);
  auto y = hrw_weight(b, group);
  return x != y ? x > y : a > b;
}

std::vector<std::string> live_nodes(const router_state& st) {
  std::vector<std::string> nodes{st.node_name};
  for (auto& [addr, peer] : st.peers)
    if (!peer.name.empty() && peer.router)
      nodes.push_back(peer.name);
  return nodes;
}

std::string hrw_owner(const router_state& st, const std::string& group) {
  auto nodes = live_nodes(st);
  auto best = nodes.front();
  for (auto& node : nodes)
    if (hrw_beats(node, best, group))
      best = node;
  return best;
}

const std::string& owner_of(const router_state& st, const router_group& entry) {
  return entry.owner.empty() ? st.node_name : entry.owner;
}

group_entry entry_of(const router_state& st, const std::string& name,
                     const router_group& entry) {
  return group_entry{name,
                     entry.settings,
                     owner_of(st, entry),
                     entry.owner.empty() ? st.node_epoch : entry.epoch,
                     entry.handle,
                     entry.term,
                     entry.replica};
}

group_info info_of_entry(const group_entry& entry) {
  group_info info;
  info.name = entry.name;
  info.settings = entry.settings;
  info.owner_node = entry.owner;
  info.replica_node = entry.replica;
  info.term = entry.term;
  return info;
}

uint64_t track_pending(router_state& st, const caf::actor_addr& node_router,
                       std::string what,
                       std::function<void(const caf::error&)> fail) {
  if (!node_router)
    return 0;
  auto id = st.next_pending++;
  st.pending[node_router].emplace(
      id, pending_request{std::move(what), std::move(fail)});
  return id;
}

bool settle_pending(router_state& st, const caf::actor_addr& node_router,
                    uint64_t id) {
  if (id == 0)
    return true;
  auto i = st.pending.find(node_router);
  if (i == st.pending.end() || i->second.erase(id) == 0)
    return false;
  if (i->second.empty())
    st.pending.erase(i);
  return true;
}

void fail_pending(router_pointer self, const caf::actor_addr& addr,
                  const std::string& node) {
  auto& st = self->state;
  auto i = st.pending.find(addr);
  if (i == st.pending.end())
    return;
  auto requests = std::move(i->second);
  st.pending.erase(i);
  log::info("requests to a node that went down answered",
            {{"node", node}, {"requests", requests.size()}});
  for (auto& [id, request] : requests)
    if (request.fail)
      request.fail(make_caf_error(ec::node_unavailable,
                                  "the node " + node + " that owns " +
                                      request.what + " is gone"));
}

void send_owned_groups(router_pointer self, router_peer& peer) {
  auto& st = self->state;
  group_entry_list owned;
  for (auto& [name, entry] : st.groups)
    if (entry.owner.empty())
      owned.push_back(entry_of(st, name, entry));
  self->request(peer.router, caf::infinite, gsync_atom_v, std::move(owned))
      .then([](caf::ok_atom) {}, [](caf::error&) {});
}

void enter_remote_group(router_pointer self, const caf::actor_addr& from,
                        group_entry entry, std::function<void()> done) {
  auto& st = self->state;
  auto finish = [&done] {
    if (done)
      done();
  };
  if (!entry.handle || entry.owner.empty() || entry.owner == st.node_name) {
    finish();
    return;
  }
  if (auto err = validate_pattern(entry.settings.pattern, st.names)) {
    log::warn("peer group refused: not a valid pattern",
              {{"group", entry.name}, {"error", err.text}});
    finish();
    return;
  }
  // The group this entry takes the place of in the topics' routes (one
  // route version: no publish finds the topic without a group meanwhile).
  group_actor replaces;
  auto same_pattern = [&](const router_group& held) {
    return held.settings.pattern == entry.settings.pattern;
  };
  auto forget_held = [&](router_group& held) {
    if (same_pattern(held))
      replaces = held.handle;
    forget_group(self, held.handle.address(), static_cast<bool>(replaces));
  };
  if (auto i = st.groups.find(entry.name); i != st.groups.end()) {
    auto& held = i->second;
    if (refuse_stale_entry(self, entry, held)) {
      finish(); // an old owner's entry: ok to the sender, ignored
      return;
    }
    if (held.handle == entry.handle) {
      held.epoch = entry.epoch;
      held.owner_router = from;
      held.term = entry.term;
      held.replica = std::move(entry.replica);
      finish();
      return;
    }
    auto held_owner = owner_of(st, held);
    if (entry.term > held.term) {
      // A newer ownership term (a replica took over): it replaces the
      // entry; a stale local group is deleted, its members re-join.
      log::warn("group entry replaced by a newer ownership term",
                {{"group", entry.name},
                 {"owner", entry.owner},
                 {"term", entry.term},
                 {"old_owner", held_owner},
                 {"old_term", held.term}});
      if (held.owner.empty())
        replaces = drop_conflicting_group(self, entry.name, entry.owner, true,
                                          same_pattern(held));
      else
        forget_held(held);
    } else if (!held.owner.empty() && held_owner == entry.owner) {
      // Its owner re-created it (restarted, or deleted and created again).
      forget_held(held);
    } else if (hrw_beats(held_owner, entry.owner, entry.name)) {
      ++st.group_conflicts;
      log::warn("two owners of one group: the higher HRW rank keeps it",
                {{"group", entry.name},
                 {"kept", held_owner},
                 {"dropped", entry.owner}});
      finish(); // the other owner drops its group when it learns of this one
      return;
    } else {
      ++st.group_conflicts;
      log::warn("two owners of one group: the higher HRW rank keeps it",
                {{"group", entry.name},
                 {"kept", entry.owner},
                 {"dropped", held_owner}});
      if (held.owner.empty())
        replaces = drop_conflicting_group(self, entry.name, entry.owner, false,
                                          same_pattern(held));
      else
        forget_held(held);
    }
  }
  auto key = st.next_key++;
  auto pattern = entry.settings.pattern;
  auto handle = entry.handle;
  auto window = static_cast<uint64_t>(entry.settings.dedup_window.count());
  st.group_names.emplace(handle.address(), entry.name);
  st.patterns.insert(pattern, key);
  st.subscriptions.emplace(key, router_subscription{pattern, {}, handle, {}});
  // Its proxy's down message drops it too (the node is gone).
  self->monitor(handle);
  st.groups.insert_or_assign(
      entry.name,
      router_group{handle, std::move(entry.settings), key,
                   std::move(entry.owner), entry.epoch, from, entry.term,
                   std::move(entry.replica), false, false});
  request_shards(
      self, pattern,
      [done = std::move(done)] {
        if (done)
          done();
      },
      add_group_atom_v, handle, window, replaces);
}

caf::result<caf::ok_atom> take_group_add(router_pointer self,
                                         group_entry& entry) {
  auto [addr, peer] = peer_of_sender(self);
  auto promise = self->make_response_promise<caf::ok_atom>();
  enter_remote_group(self, addr, std::move(entry),
                     [promise]() mutable { promise.deliver(caf::ok_atom_v); });
  return promise;
}

void take_group_del(router_pointer self, const std::string& name) {
  auto& st = self->state;
  auto [addr, peer] = peer_of_sender(self);
  drop_held_replica(self, name, peer->name); // its replica here quits
  auto i = st.groups.find(name);
  if (i == st.groups.end() || i->second.owner.empty() ||
      i->second.owner_router != addr)
    return; // not the group that peer owns (a conflict resolved, a race)
  forget_group(self, i->second.handle.address());
}

caf::result<caf::ok_atom> take_group_sync(router_pointer self,
                                          group_entry_list& entries) {
  auto [addr, peer] = peer_of_sender(self);
  auto promise = self->make_response_promise<caf::ok_atom>();
  auto remaining = std::make_shared<std::size_t>(entries.size() + 1);
  auto count_down = [self, addr = addr, promise, remaining]() mutable {
    if (--*remaining > 0)
      return;
    auto& peers = self->state.peers;
    if (auto i = peers.find(addr); i != peers.end()) {
      i->second.groups_synced = true;
      peer_maybe_ready(i->second);
    }
    promise.deliver(caf::ok_atom_v);
  };
  for (auto& entry : entries)
    enter_remote_group(self, addr, std::move(entry), count_down);
  count_down();
  return promise;
}

caf::result<group_entry> take_group_create(router_pointer self,
                                           std::string name,
                                           group_settings settings,
                                           bool any_settings) {
  auto& st = self->state;
  if (auto i = st.groups.find(name); i != st.groups.end()) {
    // Sticky: the group the directory holds, wherever it lives.
    auto& held = i->second;
    if (any_settings && held.settings.pattern != settings.pattern)
      return make_caf_error(ec::group_pattern_conflict,
                            "group \"" + name + "\" exists with pattern \"" +
                                held.settings.pattern + "\", not \"" +
                                settings.pattern + "\"");
    if (!any_settings && !(held.settings == settings))
      return make_caf_error(ec::group_pattern_conflict,
                            "group \"" + name + "\" exists with pattern \"" +
                                held.settings.pattern +
                                "\" and other settings");
    return entry_of(st, name, held);
  }
  if (auto err = check_new_group(st, name, settings))
    return make_caf_error(err.code, err.text);
  auto promise = self->make_response_promise<group_entry>();
  spawn_owned_group(self, name, settings, any_settings ? "auto" : "request",
                    [self, promise, name](const group_actor&) mutable {
                      auto& st = self->state;
                      auto i = st.groups.find(name);
                      if (i == st.groups.end())
                        promise.deliver(make_caf_error(
                            ec::unknown_group,
                            "group \"" + name + "\" was deleted meanwhile"));
                      else
                        promise.deliver(entry_of(st, name, i->second));
                    });
  return promise;
}

void drop_owner_groups(router_pointer self, const caf::actor_addr& addr,
                       const std::string& node) {
  auto& st = self->state;
  std::vector<caf::actor_addr> lost;
  for (auto& [name, entry] : st.groups)
    if (!entry.owner.empty() && entry.owner_router == addr &&
        !entry.owner_lost) {
      log::warn("group lost with its owner node: what it held is lost",
                {{"group", name}, {"node", node}});
      lost.push_back(entry.handle.address());
    }
  st.groups_lost += lost.size();
  for (auto& group : lost)
    forget_group(self, group);
}

directory_stats describe_directory(router_pointer self) {
  auto& st = self->state;
  directory_stats result;
  for (auto& [name, entry] : st.groups)
    ++(entry.owner.empty() ? result.owned : result.remote);
  result.lost = st.groups_lost;
  result.conflicts = st.group_conflicts;
  result.promotions = st.promotions;
  result.replicas_held = st.replicas.size();
  result.stale_entries_refused = st.stale_entries_refused;
  return result;
}

void create_config_groups(router_pointer self) {
  auto& st = self->state;
  for (auto& [name, settings] : st.config_groups) {
    if (st.groups.count(name) != 0 || hrw_owner(st, name) != st.node_name)
      continue;
    if (auto err = check_new_group(st, name, settings)) {
      log::warn("config group not created", {{"error", err.text}});
      continue;
    }
    spawn_owned_group(self, name, settings, "config", {});
  }
}

} // namespace tb
