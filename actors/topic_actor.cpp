#include "actors/topic_actor.hpp"

#include <algorithm>
#include <memory>

namespace tb {

namespace {

// Returns the session entry for `handle`, monitoring it on first sight.
topic_session& session_entry(topic_pointer self, const session_actor& handle) {
  auto& sessions = self->state.sessions;
  auto i = sessions.find(handle.address());
  if (i != sessions.end())
    return i->second;
  self->monitor(handle);
  ++self->state.idle_generation;
  return sessions.emplace(handle.address(), topic_session{handle})
      .first->second;
}

// Starts the idle countdown when nobody uses this topic any more.
// Returns true if nobody uses the topic: no session, no group.
bool is_idle(const topic_state& st) {
  return st.sessions.empty() && st.current->groups.empty();
}

void check_idle(topic_pointer self) {
  auto& st = self->state;
  if (!is_idle(st))
    return;
  auto generation = ++st.idle_generation;
  self->delayed_send(self, st.idle_timeout, tick_atom_v, generation);
}

// Drops a session's entry if it neither caches nor receives.
void release_if_unused(topic_pointer self, const caf::actor_addr& addr) {
  auto& sessions = self->state.sessions;
  auto i = sessions.find(addr);
  if (i == sessions.end() || i->second.caches || i->second.subscriptions > 0)
    return;
  self->demonitor(addr);
  sessions.erase(i);
  check_idle(self);
}

// Installs `next` as the route and pushes it to every cacher. Returns how
// many cachers were asked; each answers `ok` (or fails if it died) through
// `on_answer`.
template <class OnAnswer>
size_t publish_route(topic_pointer self, std::shared_ptr<route> next,
                     OnAnswer on_answer) {
  auto& st = self->state;
  next->version = st.current->version + 1;
  st.current = route_ref{std::move(next)};
  size_t asked = 0;
  for (auto& [addr, entry] : st.sessions) {
    if (!entry.caches)
      continue;
    ++asked;
    self->request(entry.handle, caf::infinite, route_atom_v, st.current)
        .then([on_answer](caf::ok_atom) mutable { on_answer(); },
              [on_answer](caf::error&) mutable { on_answer(); });
  }
  return asked;
}

// Returns a copy of the current route without `target`s of `addr` (all of
// them when `only` is null, else just `*only`).
std::shared_ptr<route> route_without(const topic_state& st,
                                     const caf::actor_addr& addr,
                                     const fanout_target* only) {
  auto next = std::make_shared<route>(*st.current);
  auto& fanout = next->fanout;
  fanout.erase(std::remove_if(fanout.begin(), fanout.end(),
                              [&](const fanout_target& x) {
                                return x.session.address() == addr &&
                                       (!only || x == *only);
                              }),
               fanout.end());
  return next;
}

// Removes one target (or all of a session's) and publishes the new route.
void remove_targets(topic_pointer self, const caf::actor_addr& addr,
                    const fanout_target* only) {
  auto& st = self->state;
  auto next = route_without(st, addr, only);
  auto removed = st.current->fanout.size() - next->fanout.size();
  if (removed == 0)
    return;
  if (auto i = st.sessions.find(addr); i != st.sessions.end())
    i->second.subscriptions -= std::min<uint32_t>(
        i->second.subscriptions, static_cast<uint32_t>(removed));
  publish_route(self, std::move(next), [] {});
}

// Installs `next` and answers once every cacher has it.
caf::result<caf::ok_atom> install_confirmed(topic_pointer self,
                                            std::shared_ptr<route> next);

// Adds a target and answers once every cacher has the new route.
caf::result<caf::ok_atom> add_target(topic_pointer self,
                                     const fanout_target& target) {
  auto& st = self->state;
  auto& fanout = st.current->fanout;
  if (std::find(fanout.begin(), fanout.end(), target) != fanout.end())
    return caf::ok_atom_v;
  ++session_entry(self, target.session).subscriptions;
  auto next = std::make_shared<route>(*st.current);
  next->fanout.push_back(target);
  std::stable_sort(next->fanout.begin(), next->fanout.end(),
                   [](const fanout_target& x, const fanout_target& y) {
                     return x.session.address() < y.session.address();
                   });
  return install_confirmed(self, std::move(next));
}

// Adds a group and answers once every cacher has the new route.
caf::result<caf::ok_atom> add_group(topic_pointer self,
                                    const group_actor& group) {
  auto& groups = self->state.current->groups;
  if (std::find(groups.begin(), groups.end(), group) != groups.end())
    return caf::ok_atom_v;
  auto next = std::make_shared<route>(*self->state.current);
  next->groups.push_back(group);
  ++self->state.idle_generation;
  return install_confirmed(self, std::move(next));
}

// Removes a group and publishes the new route.
void remove_group(topic_pointer self, const group_actor& group) {
  auto next = std::make_shared<route>(*self->state.current);
  auto& groups = next->groups;
  auto i = std::find(groups.begin(), groups.end(), group);
  if (i == groups.end())
    return;
  groups.erase(i);
  publish_route(self, std::move(next), [] {});
  check_idle(self);
}

caf::result<caf::ok_atom> install_confirmed(topic_pointer self,
                                            std::shared_ptr<route> next) {
  auto promise = self->make_response_promise<caf::ok_atom>();
  auto remaining = std::make_shared<size_t>(0);
  auto asked =
      publish_route(self, std::move(next), [promise, remaining]() mutable {
        if (--*remaining == 0)
          promise.deliver(caf::ok_atom_v);
      });
  if (asked == 0) {
    // The promise took over the request: answer through it, since a value
    // returned now would be dropped.
    promise.deliver(caf::ok_atom_v);
    return promise;
  }
  *remaining = asked;
  return promise;
}

} // namespace

topic_actor::behavior_type topic_actor_impl(
    topic_pointer self, std::string name, router_actor router,
    std::vector<fanout_target> initial, std::vector<group_actor> initial_groups,
    std::chrono::milliseconds idle_timeout, uint64_t first_version) {
  auto& st = self->state;
  st.topic = name;
  st.router = std::move(router);
  st.idle_timeout = idle_timeout;
  auto first = std::make_shared<route>();
  first->topic = std::move(name);
  first->version = first_version;
  first->groups = std::move(initial_groups);
  st.current = route_ref{first};
  for (auto& target : initial) {
    ++session_entry(self, target.session).subscriptions;
    first->fanout.push_back(target);
  }
  check_idle(self);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& sessions = self->state.sessions;
    if (sessions.erase(msg.source) == 0)
      return;
    remove_targets(self, msg.source, nullptr);
    check_idle(self);
  });
  return {
      [self](attach_atom, session_actor session) -> route_ref {
        session_entry(self, session).caches = true;
        return self->state.current;
      },
      [self](detach_atom, const session_actor& session) {
        auto& sessions = self->state.sessions;
        if (auto i = sessions.find(session.address()); i != sessions.end()) {
          i->second.caches = false;
          release_if_unused(self, session.address());
        }
      },
      [self](add_dest_atom, const fanout_target& target) {
        return add_target(self, target);
      },
      [self](del_dest_atom, const fanout_target& target) {
        auto addr = target.session.address();
        remove_targets(self, addr, &target);
        release_if_unused(self, addr);
      },
      [self](add_group_atom, const group_actor& group) {
        return add_group(self, group);
      },
      [self](del_group_atom, const group_actor& group) {
        remove_group(self, group);
      },
      [self](stop_atom) {
        if (!is_idle(self->state))
          return false;
        self->quit();
        return true;
      },
      [self](tick_atom, uint64_t generation) {
        auto& st = self->state;
        if (generation == st.idle_generation && is_idle(st))
          self->send(st.router, idle_atom_v, st.topic,
                     caf::actor_cast<topic_actor>(self));
      },
      [self](stats_atom) {
        auto& st = self->state;
        topic_stats result{st.topic, st.current->fanout.size(), 0,
                           st.current->groups.size(), mailbox_length(self)};
        for (auto& [addr, entry] : st.sessions)
          result.cachers += entry.caches ? 1 : 0;
        return result;
      },
  };
}

} // namespace tb
