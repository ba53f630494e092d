// How a topic shard changes routes and expires idle topics: every change
// makes a new route version sharing the unchanged chunks of the old one
// (routing/shared_chunks.hpp), so a change costs the same with 10 or
// 20,000 subscribers; idle topics wait in one list in the order they became
// idle, so an expiry pops the list's head instead of searching.

#include <algorithm>

#include "actors/topic/topic_shard.hpp"

namespace tb {

namespace {

// Returns a copy of `current` to edit into the next version.
std::shared_ptr<route> next_version(const route_ref& current) {
  return std::make_shared<route>(*current);
}

// Returns true if nobody uses `topic`: no cacher, subscriber or group.
bool unused(const shard_topic& topic) {
  return topic.cachers.empty() && topic.current->empty();
}

// Unlinks `topic` from the idle list.
void unlink_idle(topic_shard_state& st, shard_topic& topic) {
  (topic.idle_prev ? topic.idle_prev->idle_next : st.idle_head) =
      topic.idle_next;
  (topic.idle_next ? topic.idle_next->idle_prev : st.idle_tail) =
      topic.idle_prev;
  topic.idle_prev = topic.idle_next = nullptr;
  topic.idle = false;
}

// Schedules the next expiry tick for the head of the idle list.
void schedule_tick(topic_shard_pointer self) {
  auto& st = self->state;
  if (st.tick_scheduled || st.idle_head == nullptr)
    return;
  st.tick_scheduled = true;
  auto due = st.idle_head->idle_since + st.idle_timeout;
  auto now = self->clock().now();
  if (due <= now)
    self->send(self, tick_atom_v);
  else
    self->delayed_send(self, due - now, tick_atom_v);
}

// Returns the shard's topics that `pattern` matches.
std::vector<shard_topic*> matching_topics(topic_shard_state& st,
                                          const std::string& pattern) {
  std::vector<shard_topic*> matched;
  st.index.for_each_match(pattern, [&](const std::string& name) {
    matched.push_back(&st.topics.at(name));
  });
  return matched;
}

} // namespace

void add_cacher(topic_shard_pointer self, shard_topic& topic,
                const session_actor& session) {
  auto& st = self->state;
  auto [entry, added] = st.sessions.try_emplace(session.address());
  if (added) {
    entry->second.handle = session;
    self->monitor(session);
  }
  auto& use = entry->second.uses[&topic];
  if (!use.caches) {
    use.caches = true;
    topic.cachers.push_back(session);
  }
  update_idleness(self, topic);
}

void install_route(shard_topic& topic, std::shared_ptr<route> next,
                   route_pushes& pushes) {
  next->version = topic.current->version + 1;
  topic.current = route_ref{std::move(next)};
  for (auto& cacher : topic.cachers) {
    auto [at, added] =
        pushes.index.emplace(cacher.address(), pushes.batches.size());
    if (added)
      pushes.batches.emplace_back(cacher, route_list{});
    pushes.batches[at->second].second.push_back(topic.current);
  }
}

std::size_t send_pushes(topic_shard_pointer self, route_pushes& pushes,
                        const std::function<void()>& on_answer) {
  for (auto& [cacher, routes] : pushes.batches)
    self->request(cacher, caf::infinite, route_atom_v, std::move(routes))
        .then([on_answer](caf::ok_atom) { on_answer(); },
              [on_answer](caf::error&) { on_answer(); });
  auto sent = pushes.batches.size();
  pushes.batches.clear();
  pushes.index.clear();
  return sent;
}

void update_idleness(topic_shard_pointer self, shard_topic& topic) {
  auto& st = self->state;
  if (!unused(topic)) {
    if (topic.idle)
      unlink_idle(st, topic);
    return;
  }
  if (topic.idle)
    return;
  topic.idle = true;
  topic.idle_since = self->clock().now();
  topic.idle_prev = st.idle_tail;
  (st.idle_tail ? st.idle_tail->idle_next : st.idle_head) = &topic;
  st.idle_tail = &topic;
  schedule_tick(self);
}

void expire_topics(topic_shard_pointer self) {
  auto& st = self->state;
  st.tick_scheduled = false;
  auto now = self->clock().now();
  std::size_t done = 0;
  while (st.idle_head != nullptr && done < expiry_batch &&
         st.idle_head->idle_since + st.idle_timeout <= now) {
    auto& topic = *st.idle_head;
    unlink_idle(st, topic);
    // Copy the name: erasing the entry frees the route that holds it.
    auto name = topic.current->topic;
    st.index.erase(name);
    st.topics.erase(name);
    st.quota->release();
    ++st.expired;
    ++done;
  }
  if (done == expiry_batch && st.idle_head != nullptr &&
      st.idle_head->idle_since + st.idle_timeout <= now) {
    // More are due: go on after a pause. A message to itself would keep
    // this shard on its worker thread (CAF runs an actor with mail again
    // at once), and four shards expiring together would hold both of a
    // 2-core machine's workers for the whole expiry.
    st.tick_scheduled = true;
    self->delayed_send(self, expiry_pause, tick_atom_v);
    return;
  }
  schedule_tick(self);
}

// -- subscriptions and groups -------------------------------------------------

namespace {

// Adds each subscription's target to every topic its pattern matches and
// returns the changed routes to push: a topic changes once per batch (one
// new route version, one push), however many subscriptions it matches.
route_pushes stage_targets(topic_shard_pointer self,
                           const fanout_subscriptions& subscriptions) {
  auto& st = self->state;
  std::vector<std::pair<shard_topic*, std::vector<fanout_target>>> changes;
  std::unordered_map<shard_topic*, std::size_t> change_of;
  auto single = subscriptions.size() == 1; // each topic matched once
  for (auto& [pattern, target] : subscriptions) {
    auto matched = matching_topics(st, pattern);
    if (matched.empty())
      continue;
    auto [entry, added] = st.sessions.try_emplace(target.session.address());
    if (added) {
      entry->second.handle = target.session;
      self->monitor(target.session);
    }
    for (auto* topic : matched) {
      ++entry->second.uses[topic].subscriptions;
      auto at = changes.size();
      if (!single) {
        auto [known, fresh] = change_of.emplace(topic, at);
        at = known->second;
        if (!fresh) {
          changes[at].second.push_back(target);
          continue;
        }
      }
      changes.emplace_back(topic, std::vector<fanout_target>{target});
    }
  }
  route_pushes pushes;
  for (auto& [topic, targets] : changes) {
    auto next = next_version(topic->current);
    next->fanout = next->fanout.with_all(std::move(targets));
    install_route(*topic, std::move(next), pushes);
    update_idleness(self, *topic);
  }
  return pushes;
}

// Sends `pushes` and calls `done` once every cacher confirmed (at once when
// there are none).
void push_then(topic_shard_pointer self, route_pushes& pushes,
               std::function<void()> done) {
  if (pushes.batches.empty()) {
    done();
    return;
  }
  auto remaining = std::make_shared<std::size_t>(1); // held until all asked
  std::function<void()> count_down = [done = std::move(done),
                                      remaining]() mutable {
    if (--*remaining == 0)
      done();
  };
  *remaining += send_pushes(self, pushes, count_down);
  count_down();
}

} // namespace

void shard_add_targets(topic_shard_pointer self,
                       const fanout_subscriptions& subscriptions,
                       uint64_t ticket, const caf::actor& requester) {
  auto pushes = stage_targets(self, subscriptions);
  push_then(self, pushes, [self, ticket, requester] {
    if (requester)
      self->send(caf::actor_cast<router_actor>(requester), added_dest_atom_v,
                 ticket);
  });
}

namespace {

// Removes the targets `drop` selects from `topic`, staging the new route;
// returns how many were removed.
template <class Predicate>
std::size_t remove_targets(shard_topic& topic, Predicate drop,
                           route_pushes& pushes) {
  std::size_t removed = 0;
  auto fanout = topic.current->fanout.without(drop, removed);
  if (removed == 0)
    return 0;
  auto next = next_version(topic.current);
  next->fanout = std::move(fanout);
  install_route(topic, std::move(next), pushes);
  return removed;
}

// Sends staged routes whose confirmations nobody waits for.
void send_unconfirmed(topic_shard_pointer self, route_pushes& pushes) {
  send_pushes(self, pushes, [] {});
}

} // namespace

void release_use(topic_shard_pointer self, const caf::actor_addr& addr,
                 shard_topic& topic) {
  auto& sessions = self->state.sessions;
  auto entry = sessions.find(addr);
  if (entry == sessions.end())
    return;
  auto use = entry->second.uses.find(&topic);
  if (use != entry->second.uses.end() && !use->second.caches &&
      use->second.subscriptions == 0)
    entry->second.uses.erase(use);
  if (entry->second.uses.empty()) {
    self->demonitor(addr);
    sessions.erase(entry);
  }
}

void shard_remove_target(topic_shard_pointer self, const std::string& pattern,
                         const fanout_target& target) {
  auto& st = self->state;
  auto addr = target.session.address();
  auto matched = matching_topics(st, pattern);
  route_pushes pushes;
  for (auto* topic : matched) {
    auto removed = remove_targets(
        *topic, [&](const fanout_target& x) { return x == target; }, pushes);
    if (removed == 0)
      continue;
    if (auto entry = st.sessions.find(addr); entry != st.sessions.end()) {
      auto& use = entry->second.uses[topic];
      use.subscriptions -=
          std::min<uint32_t>(use.subscriptions, static_cast<uint32_t>(removed));
    }
    release_use(self, addr, *topic);
    update_idleness(self, *topic);
  }
  send_unconfirmed(self, pushes);
}

caf::result<caf::ok_atom>
shard_add_group(topic_shard_pointer self, const std::string& pattern,
                const group_actor& group,
                std::chrono::milliseconds dedup_window,
                const group_actor& replaces) {
  auto& st = self->state;
  if (replaces)
    st.group_windows.erase(replaces.address());
  if (dedup_window > st.dedup_window)
    st.group_windows[group.address()] = dedup_window;
  auto promise = self->make_response_promise<caf::ok_atom>();
  auto remaining = std::make_shared<std::size_t>(1);
  std::function<void()> count_down = [promise, remaining]() mutable {
    if (--*remaining == 0)
      promise.deliver(caf::ok_atom_v);
  };
  auto matched = matching_topics(st, pattern);
  route_pushes pushes;
  for (auto* topic : matched) {
    auto& groups = topic->current->groups;
    auto held = std::find(groups.begin(), groups.end(), group) != groups.end();
    auto old = replaces ? std::find(groups.begin(), groups.end(), replaces)
                        : groups.end();
    if (held && old == groups.end())
      continue;
    auto next = next_version(topic->current);
    auto at = next->groups.begin() + (old - groups.begin());
    if (old == groups.end())
      next->groups.push_back(group);
    else if (held)
      next->groups.erase(at);
    else
      *at = group;
    next->dedup_window_ms = topic_dedup_window(st, next->groups);
    install_route(*topic, std::move(next), pushes);
    update_idleness(self, *topic);
  }
  *remaining += send_pushes(self, pushes, count_down);
  count_down();
  return promise;
}

void shard_remove_group(topic_shard_pointer self, const std::string& pattern,
                        const group_actor& group) {
  auto& st = self->state;
  auto matched = matching_topics(st, pattern);
  route_pushes pushes;
  for (auto* topic : matched) {
    auto& groups = topic->current->groups;
    auto i = std::find(groups.begin(), groups.end(), group);
    if (i == groups.end())
      continue;
    auto next = next_version(topic->current);
    next->groups.erase(next->groups.begin() + (i - groups.begin()));
    next->dedup_window_ms = topic_dedup_window(st, next->groups);
    install_route(*topic, std::move(next), pushes);
    update_idleness(self, *topic);
  }
  st.group_windows.erase(group.address());
  send_unconfirmed(self, pushes);
}

void shard_forget_session(topic_shard_pointer self,
                          const caf::actor_addr& addr) {
  auto& st = self->state;
  auto entry = st.sessions.find(addr);
  if (entry == st.sessions.end())
    return;
  auto uses = std::move(entry->second.uses);
  st.sessions.erase(entry);
  route_pushes pushes;
  for (auto& [topic, use] : uses) {
    if (use.caches) {
      auto& cachers = topic->cachers;
      cachers.erase(std::remove_if(cachers.begin(), cachers.end(),
                                   [&](const session_actor& x) {
                                     return x.address() == addr;
                                   }),
                    cachers.end());
    }
    if (use.subscriptions > 0)
      remove_targets(
          *topic,
          [&](const fanout_target& x) { return x.session.address() == addr; },
          pushes);
    update_idleness(self, *topic);
  }
  send_unconfirmed(self, pushes);
}

} // namespace tb
