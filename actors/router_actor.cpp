#include "actors/router_actor.hpp"

#include <memory>
#include <vector>

#include "actors/topic_actor.hpp"

namespace tb {

namespace {

// Collects the fan-out targets of every subscription matching `topic`.
std::vector<fanout_target> targets_for(router_state& st,
                                       const std::string& topic) {
  std::vector<uint64_t> keys;
  st.patterns.match(topic, keys);
  std::vector<fanout_target> result;
  result.reserve(keys.size());
  for (auto key : keys)
    if (auto i = st.subscriptions.find(key); i != st.subscriptions.end())
      result.push_back(i->second.target);
  return result;
}

// Returns the topic actor for `name`, spawning it with its initial route.
topic_actor topic_for(router_pointer self, const std::string& name) {
  auto& st = self->state;
  if (auto i = st.topics.find(name); i != st.topics.end())
    return i->second;
  auto first_version = ++st.spawned_topics << 32;
  // Linked: when the router stops, its topics stop with it.
  auto topic = self->spawn<caf::linked>(
      topic_actor_impl, name, caf::actor_cast<router_actor>(self),
      targets_for(st, name), st.topic_idle_timeout, first_version);
  self->monitor(topic);
  st.linked_topics.insert(topic.address());
  st.topics.emplace(name, topic);
  st.topic_names.emplace(topic.address(), name);
  st.topic_index.insert(name);
  return topic;
}

// Forgets a topic actor that stopped or died.
void forget_topic(router_state& st, const caf::actor_addr& addr) {
  auto i = st.topic_names.find(addr);
  if (i == st.topic_names.end())
    return;
  st.topic_index.erase(i->second);
  st.topics.erase(i->second);
  st.topic_names.erase(i);
}

// Adds a subscription and answers once every matching topic confirmed.
caf::result<caf::ok_atom> subscribe(router_pointer self, std::string pattern,
                                    uint64_t subscription_id,
                                    session_actor session) {
  auto& st = self->state;
  auto& keys = st.keys_by_session[session.address()];
  if (keys.empty())
    self->monitor(session);
  if (keys.count(subscription_id) != 0)
    return caf::ok_atom_v; // already in place: idempotent
  auto key = st.next_key++;
  keys.emplace(subscription_id, key);
  st.patterns.insert(pattern, key);
  fanout_target target{session, subscription_id};
  st.subscriptions.emplace(key, router_subscription{pattern, target});
  std::vector<topic_actor> affected;
  st.topic_index.for_each_match(pattern, [&](const std::string& name) {
    affected.push_back(st.topics.at(name));
  });
  if (affected.empty())
    return caf::ok_atom_v;
  auto promise = self->make_response_promise<caf::ok_atom>();
  auto remaining = std::make_shared<size_t>(affected.size());
  auto count_down = [promise, remaining]() mutable {
    if (--*remaining == 0)
      promise.deliver(caf::ok_atom_v);
  };
  for (auto& topic : affected)
    self->request(topic, caf::infinite, add_dest_atom_v, target)
        .then([count_down](caf::ok_atom) mutable { count_down(); },
              [count_down](caf::error&) mutable { count_down(); });
  return promise;
}

// Removes one subscription from the trie and from every matching topic.
void unsubscribe(router_pointer self, const caf::actor_addr& session,
                 uint64_t subscription_id) {
  auto& st = self->state;
  auto by_session = st.keys_by_session.find(session);
  if (by_session == st.keys_by_session.end())
    return;
  auto by_id = by_session->second.find(subscription_id);
  if (by_id == by_session->second.end())
    return;
  auto key = by_id->second;
  by_session->second.erase(by_id);
  if (by_session->second.empty()) {
    self->demonitor(session);
    st.keys_by_session.erase(by_session);
  }
  auto entry = st.subscriptions.find(key);
  if (entry == st.subscriptions.end())
    return;
  auto sub = std::move(entry->second);
  st.subscriptions.erase(entry);
  st.patterns.erase(sub.pattern, key);
  st.topic_index.for_each_match(sub.pattern, [&](const std::string& name) {
    self->send(st.topics.at(name), del_dest_atom_v, sub.target);
  });
}

// Drops every subscription of a session that ended. Its topics drop it
// through their own monitors.
void forget_session(router_state& st, const caf::actor_addr& session) {
  auto i = st.keys_by_session.find(session);
  if (i == st.keys_by_session.end())
    return;
  for (auto& [subscription_id, key] : i->second) {
    auto entry = st.subscriptions.find(key);
    if (entry == st.subscriptions.end())
      continue;
    st.patterns.erase(entry->second.pattern, key);
    st.subscriptions.erase(entry);
  }
  st.keys_by_session.erase(i);
}

} // namespace

router_actor::behavior_type
router_actor_impl(router_pointer self,
                  std::chrono::milliseconds topic_idle_timeout) {
  self->state.topic_idle_timeout = topic_idle_timeout;
  // A topic's exit is handled by its down message; any other exit (the
  // broker stopping) stops the router and, through the links, its topics.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (self->state.linked_topics.erase(msg.source) == 0)
      self->quit(msg.reason);
  });
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (st.topic_names.count(msg.source) != 0)
      forget_topic(st, msg.source);
    else
      forget_session(st, msg.source);
  });
  return {
      [self](resolve_atom, const std::string& name,
             session_actor session) -> caf::delegated<route_ref> {
        auto topic = topic_for(self, name);
        return self->delegate(topic, attach_atom_v, std::move(session));
      },
      [self](detach_atom, const std::string& name, session_actor session) {
        auto& st = self->state;
        if (auto i = st.topics.find(name); i != st.topics.end())
          self->send(i->second, detach_atom_v, std::move(session));
      },
      [self](sub_atom, std::string pattern, uint64_t subscription_id,
             session_actor session) -> caf::result<caf::ok_atom> {
        return subscribe(self, std::move(pattern), subscription_id,
                         std::move(session));
      },
      [self](unsub_atom, uint64_t subscription_id, session_actor session) {
        unsubscribe(self, session.address(), subscription_id);
      },
      [self](idle_atom, const std::string& name, topic_actor topic) {
        auto& st = self->state;
        auto i = st.topics.find(name);
        if (i == st.topics.end() || i->second != topic)
          return;
        // Awaiting keeps every other request (a resolve, a subscribe) from
        // reaching the topic between its last check and its exit.
        self->request(topic, caf::infinite, stop_atom_v)
            .await(
                [self, addr = topic.address()](bool stopped) {
                  if (stopped)
                    forget_topic(self->state, addr);
                },
                [self, addr = topic.address()](caf::error&) {
                  forget_topic(self->state, addr);
                });
      },
      [self](stats_atom) {
        auto& st = self->state;
        return router_stats{st.topics.size(), st.subscriptions.size(),
                            st.keys_by_session.size()};
      },
  };
}

} // namespace tb
