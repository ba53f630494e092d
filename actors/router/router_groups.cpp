// The router's share of consumer groups: creating, joining, deleting and
// listing them, and wiring them into the topics their pattern matches.

#include <algorithm>
#include <memory>
#include <variant>

#include "actors/policies/policy_registry.hpp"
#include "actors/router/router_actor.hpp"
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

// Spawns a group, enters it in the trie and in every matching topic, and
// calls `ready(group)` once every publisher caching those topics knows it
// (at once when no topic matches). `origin` says who asked, for the log:
// `request` (the config or CreateGroup) or `auto` (a first member).
template <class Ready>
group_actor spawn_group(router_pointer self, const std::string& name,
                        const group_settings& settings, const char* origin,
                        Ready ready) {
  auto& st = self->state;
  log_group("group created", name, settings, "origin", origin);
  // Linked: a group stops with the router.
  auto group =
      self->spawn<caf::linked>(group_actor_impl, name, settings, st.group_ctx);
  self->monitor(group);
  st.linked_children.insert(group.address());
  auto key = st.next_key++;
  st.groups.emplace(name, router_group{group, settings, key});
  st.group_names.emplace(group.address(), name);
  st.patterns.insert(settings.pattern, key);
  st.subscriptions.emplace(
      key, router_subscription{settings.pattern, {}, group, {}});
  request_shards(
      self, settings.pattern, [ready, group]() mutable { ready(group); },
      add_group_atom_v, group,
      static_cast<uint64_t>(settings.dedup_window.count()));
  return group;
}

} // namespace

caf::result<group_info> create_group(router_pointer self, std::string name,
                                     group_settings settings) {
  auto& st = self->state;
  if (auto err = check_group(name, settings, st.names))
    return make_caf_error(err.code, err.text);
  if (auto i = st.groups.find(name); i != st.groups.end()) {
    if (i->second.settings == settings)
      return self->delegate(i->second.handle, stats_atom_v);
    return make_caf_error(ec::group_pattern_conflict,
                          "group \"" + name + "\" exists with pattern \"" +
                              i->second.settings.pattern +
                              "\" and other settings");
  }
  if (auto err = check_group_count(st))
    return make_caf_error(err.code, "group \"" + name + "\": " + err.text);
  auto promise = self->make_response_promise<group_info>();
  auto info = group_info{name, settings, {}, {}, 0};
  spawn_group(
      self, name, settings, "request",
      [promise, info](const group_actor&) mutable { promise.deliver(info); });
  return promise;
}

caf::result<group_actor> join_group(router_pointer self, std::string name,
                                    std::string pattern, session_actor session,
                                    member_spec spec) {
  auto& st = self->state;
  auto promise = self->make_response_promise<group_actor>();
  auto join = [self, promise, session, spec](group_actor group) mutable {
    self->request(group, caf::infinite, join_atom_v, session, spec)
        .then(
            [promise, group](caf::ok_atom) mutable { promise.deliver(group); },
            [promise](caf::error& err) mutable { promise.deliver(err); });
  };
  if (auto i = st.groups.find(name); i != st.groups.end()) {
    if (i->second.settings.pattern != pattern) {
      promise.deliver(make_caf_error(
          ec::group_pattern_conflict,
          "group \"" + name + "\" exists with pattern \"" +
              i->second.settings.pattern + "\", not \"" + pattern + "\""));
      return promise;
    }
    join(i->second.handle);
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
  auto err = check_group(name, settings, st.names);
  if (!err)
    if ((err = check_group_count(st)))
      err.text = "group \"" + name + "\": " + err.text;
  if (err) {
    promise.deliver(make_caf_error(err.code, err.text));
    return promise;
  }
  spawn_group(self, name, settings, "auto", join);
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
  forget_group(self, group.address());
  // Asked rather than delegated: the router logs the dropped count.
  auto promise = self->make_response_promise<uint64_t>();
  self->request(group, caf::infinite, delete_atom_v)
      .then(
          [promise, name, settings](uint64_t dropped) mutable {
            log_group("group deleted", name, settings, "dropped", dropped);
            promise.deliver(dropped);
          },
          [promise](caf::error& err) mutable { promise.deliver(err); });
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
  self->request(i->second.handle, caf::infinite, purge_atom_v)
      .then(
          [promise, name, settings](uint64_t purged) mutable {
            log_group("group purged", name, settings, "purged", purged);
            promise.deliver(purged);
          },
          [promise](caf::error& err) mutable { promise.deliver(err); });
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
  for (auto& [name, entry] : st.groups)
    self->request(entry.handle, caf::infinite, stats_atom_v)
        .then(
            [result, count_down](group_info& info) mutable {
              result->push_back(std::move(info));
              count_down();
            },
            [count_down](caf::error&) mutable { count_down(); });
  return promise;
}

void forget_group(router_pointer self, const caf::actor_addr& addr) {
  auto& st = self->state;
  auto i = st.group_names.find(addr);
  if (i == st.group_names.end())
    return;
  auto entry = st.groups.at(i->second);
  st.patterns.erase(entry.settings.pattern, entry.key);
  st.subscriptions.erase(entry.key);
  for (auto& shard : shards_for(st, entry.settings.pattern))
    self->send(shard, del_group_atom_v, entry.settings.pattern, entry.handle);
  st.groups.erase(i->second);
  st.group_names.erase(i);
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
