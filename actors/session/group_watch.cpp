#include "actors/session/group_watch.hpp"

#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/default_attachable.hpp>
#include <caf/exit_reason.hpp>

#include "actors/session/session_actor.hpp"

namespace tb {

group_watch::~group_watch() {
  for (auto& [group, e] : entries_) {
    if (!e.monitored)
      continue;
    if (auto ptr = caf::actor_cast<caf::strong_actor_ptr>(group))
      ptr->get()->detach(caf::default_attachable::observe_token{
          observer_, caf::default_attachable::monitor});
  }
}

bool group_watch::is_remote(const caf::actor_addr& group,
                            const caf::node_id& self_node) const {
  return group && (local_as_remote || group.node() != self_node);
}

bool group_watch::add(const caf::actor_addr& group,
                      const caf::actor_addr& self) {
  observer_ = self;
  auto& e = entries_[group];
  if (e.monitored)
    return false;
  e.monitored = true;
  return true;
}

void group_watch::set_name(const caf::actor_addr& group,
                           const std::string& name) {
  if (auto i = entries_.find(group); i != entries_.end())
    i->second.name = name;
}

bool group_watch::ask_name(const caf::actor_addr& group) {
  auto i = entries_.find(group);
  if (i == entries_.end() || i->second.asked)
    return false;
  i->second.asked = true;
  return true;
}

std::string group_watch::name_of(const caf::actor_addr& group) const {
  auto i = entries_.find(group);
  return i != entries_.end() ? i->second.name : std::string{};
}

uint64_t group_watch::wait(const caf::actor_addr& group, fail_fn fail) {
  auto token = next_token_++;
  entries_[group].waiters.emplace(token, std::move(fail));
  return token;
}

bool group_watch::finish(const caf::actor_addr& group, uint64_t token) {
  auto i = entries_.find(group);
  if (i == entries_.end())
    return false;
  auto found = i->second.waiters.erase(token) > 0;
  if (!i->second.monitored && i->second.waiters.empty())
    entries_.erase(i);
  return found;
}

std::vector<group_watch::fail_fn>
group_watch::down(const caf::actor_addr& group, bool node_lost) {
  std::vector<fail_fn> result;
  auto i = entries_.find(group);
  if (i == entries_.end())
    return result;
  if (!node_lost) {
    // A deleted group bounces what it did not answer: the waits end through
    // their replies.
    i->second.monitored = false;
    if (i->second.waiters.empty())
      entries_.erase(i);
    return result;
  }
  result.reserve(i->second.waiters.size());
  for (auto& [token, fail] : i->second.waiters)
    result.push_back(std::move(fail));
  entries_.erase(i);
  return result;
}

size_t group_watch::waiting() const noexcept {
  size_t result = 0;
  for (auto& [group, e] : entries_)
    result += e.waiters.size();
  return result;
}

namespace {

// Names a group in an error: `group "NAME"`, or "a group" if unknown.
std::string group_named(const std::string& group_name) {
  return group_name.empty() ? std::string{"a group"}
                            : "group \"" + group_name + "\"";
}

} // namespace

error_info group_node_lost_error(const std::string& group_name) {
  auto who = group_named(group_name);
  return make_error_info(ec::node_unavailable,
                         who + ": its owner node is gone and this was not "
                               "taken (retry: a group with replicas = 1 is "
                               "taken over by its replica's node with every "
                               "confirmed message; one without is made anew "
                               "on the next live node at its next join, and "
                               "what it held is lost)");
}

error_info group_ended_error(const std::string& group_name) {
  auto who = group_named(group_name);
  return make_error_info(ec::node_unavailable,
                         who + ": it ended before it took this (deleted, its "
                               "node stopping, or replaced by a new owner); "
                               "retry");
}

error_info group_no_reply_error(const std::string& group_name) {
  auto who = group_named(group_name);
  return make_error_info(
      ec::node_unavailable,
      who + ": its owner node did not answer within " +
          std::to_string(group_watch::reply_timeout.count()) +
          " s; it may be gone or unreachable, and this may or may not have "
          "been taken");
}

// -- the session's side -------------------------------------------------------

caf::duration group_reply_timeout(session_pointer self,
                                  const group_actor& group) {
  if (self->state.watch.is_remote(group.address(), self->node()))
    return caf::duration{group_watch::reply_timeout};
  return caf::infinite;
}

bool watch_group(session_pointer self, const group_actor& group,
                 const std::string& name) {
  auto& st = self->state;
  auto addr = group.address();
  if (!st.watch.is_remote(addr, self->node()))
    return false;
  if (st.watch.add(addr, self->address()))
    self->monitor(group);
  if (!name.empty()) {
    st.watch.set_name(addr, name);
  } else if (st.watch.name_of(addr).empty() && st.watch.ask_name(addr)) {
    // Learn its name once, for the errors that name it; bounded, as every
    // request to a remote group.
    self->request(group, caf::duration{group_watch::reply_timeout},
                  stats_atom_v)
        .then(
            [self, addr](const group_info& info) {
              self->state.watch.set_name(addr, info.name);
            },
            [](caf::error&) {
              // Unknown: the errors say "a group".
            });
  }
  return true;
}

bool end_group_wait(session_pointer self, const group_actor& group,
                    uint64_t token) {
  return token == 0 || self->state.watch.finish(group.address(), token);
}

std::string group_name_of(session_pointer self, const group_actor& group) {
  return self->state.watch.name_of(group.address());
}

void group_down(session_pointer self, caf::down_msg& msg) {
  auto& st = self->state;
  // A remote group ends normally only when deleted; otherwise its node is
  // lost or stopping (SIGTERM ends its groups `user_shutdown`).
  auto lost = msg.reason != caf::exit_reason::normal;
  auto name = st.watch.name_of(msg.source);
  auto waiting = st.watch.down(msg.source, lost);
  if (!lost)
    return;
  auto err = group_node_lost_error(name);
  for (auto& fail : waiting)
    fail(err);
  rejoin_lost_memberships(self, msg.source);
  flush(self);
}

} // namespace tb
