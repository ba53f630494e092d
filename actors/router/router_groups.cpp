// The router's share of consumer groups: creating, joining, deleting and
// listing them, and wiring them into the topics their pattern matches.

#include <algorithm>
#include <memory>
#include <variant>

#include "actors/policies/policy_registry.hpp"
#include "actors/router/router_actor.hpp"
#include "actors/router/router_directory.hpp"
#include "actors/router/router_replicas.hpp"
#include "config/group_checks.hpp"
#include "log/log.hpp"
#include "routing/pattern.hpp"
#include "routing/topic.hpp"

namespace tb {

namespace {

// Returns why `settings` cannot make a group named `name` (every problem,
// each naming the group), or no error.
error_info check_group(const std::string& name, const group_settings& s,
                       const name_limits& limits) {
  const policy_names policies{
      [](const std::string& x) { return policy_registry::contains(x); },
      policy_registry::names_text()};
  auto problems = check_group_settings(name, s, limits, policies);
  if (problems.empty())
    return {};
  auto text = "group \"" + name + "\": " + problems.front().error.text;
  for (size_t i = 1; i < problems.size(); ++i)
    text += "; " + problems[i].error.text;
  return make_error_info(problems.front().error.code, text);
}

// Returns a limit_exceeded error if the router holds `max_groups` groups.
error_info check_group_count(const router_state& st) {
  if (st.groups.size() < st.max_groups)
    return {};
  return make_error_info(ec::limit_exceeded,
                         "the broker holds limits.max_groups = " +
                             std::to_string(st.max_groups) + " groups");
}

// Logs a group's creation or deletion.
void log_group(const char* what, const std::string& name,
               const group_settings& settings, const char* key,
               std::variant<const char*, uint64_t> value) {
  if (auto* text = std::get_if<const char*>(&value))
    log::info(what, {{"group", name},
                     {"pattern", settings.pattern},
                     {"policy", settings.policy},
                     {key, *text}});
  else
    log::info(what, {{"group", name},
                     {"pattern", settings.pattern},
                     {"policy", settings.policy},
                     {key, std::get<uint64_t>(value)}});
}

} // namespace

error_info check_new_group(const router_state& st, const std::string& name,
                           const group_settings& settings) {
  auto err = check_group(name, settings, st.names);
  if (!err)
    if ((err = check_group_count(st)))
      err.text = "group \"" + name + "\": " + err.text;
  return err;
}

void spawn_owned_group(router_pointer self, const std::string& name,
                       const group_settings& settings, const char* origin,
                       std::function<void(group_actor)> ready,
                       std::shared_ptr<const group_seed> seed, uint64_t term,
                       group_actor replaces) {
  auto& st = self->state;
  log_group("group created", name, settings, "origin", origin);
  auto ctx = st.group_ctx;
  if (seed) // a promoted replica's state (tests may seed group_ctx instead)
    ctx.seed = std::move(seed);
  // Linked: a group stops with the router.
  auto group = self->spawn<caf::linked>(group_actor_impl, name, settings, ctx);
  self->monitor(group);
  st.linked_children.insert(group.address());
  auto key = st.next_key++;
  auto& entry =
      st.groups
          .insert_or_assign(
              name,
              router_group{
                  group, settings, key, {}, 0, {}, term, {}, false, false})
          .first->second;
  st.group_names.emplace(group.address(), name);
  st.patterns.insert(settings.pattern, key);
  st.subscriptions.emplace(
      key, router_subscription{settings.pattern, {}, group, {}});
  // Ready once every local publisher caching a matching topic and every
  // live peer has it: "create on n2, then publish on n1" never misses.
  auto remaining = std::make_shared<std::size_t>(2); // shards + all told
  std::function<void()> count_down = [ready = std::move(ready), group,
                                      remaining] {
    if (--*remaining == 0 && ready)
      ready(group);
  };
  *remaining +=
      tell_peers(self, count_down, gadd_atom_v, entry_of(st, name, entry));
  request_shards(self, settings.pattern, count_down, add_group_atom_v, group,
                 static_cast<uint64_t>(settings.dedup_window.count()),
                 std::move(replaces));
  count_down();
  place_replica(self, name); // replicas = 1 in a cluster (issue 32)
}

namespace {

// Returns the router of the peer node `node` (null if unknown or this node).
caf::actor_addr router_groups_node_router(const router_state& st,
                                          const std::string& node) {
  auto i = st.peer_names.find(node);
  return i != st.peer_names.end() ? i->second : caf::actor_addr{};
}

// Asks the router of `owner`, the HRW owner of a new group, to create it
// (`any_settings`: a join, whose pattern only must match); enters the
// answer in the directory and calls `on_entry(entry)` (or `on_error`).
void forward_create(router_pointer self, const std::string& owner,
                    const std::string& name, const group_settings& settings,
                    bool any_settings,
                    std::function<void(const group_entry&)> on_entry,
                    std::function<void(const caf::error&)> on_error) {
  auto& st = self->state;
  auto addr = router_groups_node_router(st, owner);
  auto peer = st.peers.find(addr);
  if (peer == st.peers.end() || !peer->second.router) {
    on_error(make_caf_error(ec::node_unavailable, "the node " + owner +
                                                      " that owns group \"" +
                                                      name + "\" is gone"));
    return;
  }
  ask_node<group_entry>(
      self, addr, "group \"" + name + "\"", peer->second.router,
      [self, on_entry](group_entry& entry) {
        // The owner answers once this node applied its gadd; the entry is
        // entered here anyway (idempotent) in case a race reordered them.
        auto from = router_groups_node_router(self->state, entry.owner);
        if (!from || entry.owner == self->state.node_name) {
          on_entry(entry);
          return;
        }
        enter_remote_group(self, from, entry,
                           [on_entry, entry] { on_entry(entry); });
      },
      on_error, gcreate_atom_v, name, settings, any_settings);
}

} // namespace

caf::result<group_info> create_group(router_pointer self, std::string name,
                                     group_settings settings) {
  auto& st = self->state;
  if (auto err = check_group(name, settings, st.names))
    return make_caf_error(err.code, err.text);
  auto i = st.groups.find(name);
  if (i != st.groups.end() && !(i->second.settings == settings))
    return make_caf_error(ec::group_pattern_conflict,
                          "group \"" + name + "\" exists with pattern \"" +
                              i->second.settings.pattern +
                              "\" and other settings");
  auto owner = hrw_owner(st, name);
  if (i == st.groups.end() && owner == st.node_name)
    if (auto err = check_group_count(st))
      return make_caf_error(err.code, "group \"" + name + "\": " + err.text);
  auto promise = self->make_response_promise<group_info>();
  auto fail = [promise](const caf::error& err) mutable {
    promise.deliver(err);
  };
  if (i != st.groups.end()) {
    auto& entry = i->second;
    ask_node<group_info>(
        self, entry.owner_router, "group \"" + name + "\"", entry.handle,
        [promise, owner = owner_of(st, entry), replica = entry.replica,
         term = entry.term](group_info& info) mutable {
          info.owner_node = owner;
          info.replica_node = replica;
          info.term = term;
          promise.deliver(info);
        },
        fail, stats_atom_v);
    return promise;
  }
  if (owner != st.node_name) {
    forward_create(
        self, owner, name, settings, false,
        [promise](const group_entry& entry) mutable {
          promise.deliver(info_of_entry(entry));
        },
        fail);
    return promise;
  }
  group_info info;
  info.name = name;
  info.settings = settings;
  info.owner_node = st.node_name;
  spawn_owned_group(
      self, name, settings, "request",
      [promise, info](const group_actor&) mutable { promise.deliver(info); });
  return promise;
}

caf::result<group_actor> join_group(router_pointer self, std::string name,
                                    std::string pattern, session_actor session,
                                    member_spec spec) {
  auto& st = self->state;
  auto promise = self->make_response_promise<group_actor>();
  auto fail = [promise](const caf::error& err) mutable {
    promise.deliver(err);
  };
  // Joins the group actor itself, across nodes too: the group monitors the
  // member's session (a proxy on another node), so a member node's death
  // is a down message there.
  auto join = [self, promise, session, spec, name,
               fail](const group_actor& group,
                     const caf::actor_addr& owner_router) mutable {
    ask_node<caf::ok_atom>(
        self, owner_router, "group \"" + name + "\"", group,
        [promise, group](caf::ok_atom) mutable { promise.deliver(group); },
        fail, join_atom_v, session, spec);
  };
  if (auto i = st.groups.find(name); i != st.groups.end()) {
    if (i->second.settings.pattern != pattern) {
      promise.deliver(make_caf_error(
          ec::group_pattern_conflict,
          "group \"" + name + "\" exists with pattern \"" +
              i->second.settings.pattern + "\", not \"" + pattern + "\""));
      return promise;
    }
    if (i->second.owner_lost) { // its replica is taking over: retry
      promise.deliver(takeover_error(name, i->second));
      return promise;
    }
    join(i->second.handle, i->second.owner_router);
    return promise;
  }
  if (!st.auto_create_groups) {
    promise.deliver(
        make_caf_error(ec::unknown_group,
                       "no group named \"" + name + "\" (auto-create is off)"));
    return promise;
  }
  auto settings = st.group_defaults;
  settings.pattern = std::move(pattern);
  if (auto err = check_group(name, settings, st.names)) {
    promise.deliver(make_caf_error(err.code, err.text));
    return promise;
  }
  auto owner = hrw_owner(st, name);
  if (owner != st.node_name) {
    forward_create(
        self, owner, name, settings, true,
        [self, join](const group_entry& entry) mutable {
          join(entry.handle,
               router_groups_node_router(self->state, entry.owner));
        },
        fail);
    return promise;
  }
  if (auto err = check_group_count(st)) {
    promise.deliver(
        make_caf_error(err.code, "group \"" + name + "\": " + err.text));
    return promise;
  }
  spawn_owned_group(self, name, settings, "auto",
                    [join](group_actor group) mutable { join(group, {}); });
  return promise;
}

caf::result<uint64_t> delete_group(router_pointer self,
                                   const std::string& name) {
  auto& st = self->state;
  auto i = st.groups.find(name);
  if (i == st.groups.end())
    return make_caf_error(ec::unknown_group, "no group named \"" + name + "\"");
  auto group = i->second.handle;
  auto settings = i->second.settings;
  auto owner_router = i->second.owner_router;
  // Out of this node's routes now; a remote group's owner tells the others.
  forget_group(self, group.address());
  // Asked rather than delegated: the router logs the dropped count.
  auto promise = self->make_response_promise<uint64_t>();
  ask_node<uint64_t>(
      self, owner_router, "group \"" + name + "\"", group,
      [promise, name, settings](uint64_t dropped) mutable {
        log_group("group deleted", name, settings, "dropped", dropped);
        promise.deliver(dropped);
      },
      [promise](const caf::error& err) mutable { promise.deliver(err); },
      delete_atom_v);
  return promise;
}

caf::result<uint64_t> purge_group(router_pointer self,
                                  const std::string& name) {
  auto& st = self->state;
  auto i = st.groups.find(name);
  if (i == st.groups.end())
    return make_caf_error(ec::unknown_group, "no group named \"" + name + "\"");
  auto settings = i->second.settings;
  // Asked rather than delegated: the router logs the purged count.
  auto promise = self->make_response_promise<uint64_t>();
  ask_node<uint64_t>(
      self, i->second.owner_router, "group \"" + name + "\"", i->second.handle,
      [promise, name, settings](uint64_t purged) mutable {
        log_group("group purged", name, settings, "purged", purged);
        promise.deliver(purged);
      },
      [promise](const caf::error& err) mutable { promise.deliver(err); },
      purge_atom_v);
  return promise;
}

caf::result<std::vector<group_info>> list_groups(router_pointer self) {
  auto& st = self->state;
  if (st.groups.empty())
    return std::vector<group_info>{};
  auto promise = self->make_response_promise<std::vector<group_info>>();
  auto result = std::make_shared<std::vector<group_info>>();
  auto remaining = std::make_shared<size_t>(st.groups.size());
  auto count_down = [promise, result, remaining]() mutable {
    if (--*remaining > 0)
      return;
    std::sort(result->begin(), result->end(),
              [](const group_info& x, const group_info& y) {
                return x.name < y.name;
              });
    promise.deliver(std::move(*result));
  };
  // Every group of the cluster once: the directory holds each group once,
  // local or remote; a group whose node went down meanwhile is left out.
  for (auto& [name, entry] : st.groups)
    ask_node<group_info>(
        self, entry.owner_router, "group \"" + name + "\"", entry.handle,
        [result, count_down, owner = owner_of(st, entry),
         replica = entry.replica, term = entry.term](group_info& info) mutable {
          info.owner_node = owner;
          info.replica_node = replica;
          info.term = term;
          result->push_back(std::move(info));
          count_down();
        },
        [count_down](const caf::error&) mutable { count_down(); },
        stats_atom_v);
  return promise;
}

void forget_group(router_pointer self, const caf::actor_addr& addr,
                  bool replaced_in_routes) {
  auto& st = self->state;
  auto i = st.group_names.find(addr);
  if (i == st.group_names.end())
    return;
  auto name = i->second;
  auto entry = st.groups.at(name);
  st.patterns.erase(entry.settings.pattern, entry.key);
  st.subscriptions.erase(entry.key);
  if (!replaced_in_routes)
    for (auto& shard : shards_for(st, entry.settings.pattern))
      self->send(shard, del_group_atom_v, entry.settings.pattern, entry.handle);
  st.groups.erase(name);
  st.group_names.erase(i);
  if (!entry.owner.empty()) {
    self->demonitor(entry.handle.address()); // remote: its owner tells
    return;
  }
  // Groups across nodes: a group this node owned is gone everywhere.
  for (auto& [peer_addr, peer] : st.peers)
    if (peer.sync_sent && peer.router)
      self->request(peer.router, caf::infinite, gdel_atom_v, name)
          .then([](caf::ok_atom) {}, [](caf::error&) {});
}

caf::result<group_actor> find_group(router_pointer self,
                                    const std::string& name,
                                    const std::string& topic) {
  auto& st = self->state;
  auto i = st.groups.find(name);
  if (i == st.groups.end())
    return make_caf_error(ec::no_responders,
                          "no group named \"" + name +
                              "\": nobody can answer the request");
  if (!pattern_matches(i->second.settings.pattern, topic))
    return make_caf_error(
        ec::invalid_request,
        "group \"" + name + "\" holds \"" + i->second.settings.pattern +
            "\", which does not match topic \"" + topic + "\"");
  return i->second.handle;
}

} // namespace tb
