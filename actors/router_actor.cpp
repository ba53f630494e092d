#include "actors/router_actor.hpp"

#include <memory>
#include <vector>

#include "actors/session_actor.hpp"
#include "actors/topic_actor.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace {

// Collects the fan-out targets and groups of every pattern matching `topic`.
std::pair<std::vector<fanout_target>, std::vector<group_actor>>
targets_for(router_state& st, const std::string& topic) {
  std::vector<uint64_t> keys;
  st.patterns.match(topic, keys);
  std::pair<std::vector<fanout_target>, std::vector<group_actor>> result;
  for (auto key : keys)
    if (auto i = st.subscriptions.find(key); i != st.subscriptions.end()) {
      if (i->second.group)
        result.second.push_back(i->second.group);
      else
        result.first.push_back(i->second.target);
    }
  return result;
}

// Returns the topic actor for `name`, spawning it with its initial route.
topic_actor topic_for(router_pointer self, const std::string& name) {
  auto& st = self->state;
  if (auto i = st.topics.find(name); i != st.topics.end())
    return i->second;
  auto first_version = ++st.spawned_topics << 32;
  // Linked: when the router stops, its topics stop with it.
  auto [fanout, groups] = targets_for(st, name);
  auto topic = self->spawn<caf::linked>(topic_actor_impl, name,
                                        caf::actor_cast<router_actor>(self),
                                        std::move(fanout), std::move(groups),
                                        st.topic_idle_timeout, first_version);
  self->monitor(topic);
  st.linked_children.insert(topic.address());
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
  st.subscriptions.emplace(key, router_subscription{pattern, target, {}});
  auto affected = topics_matching(st, pattern);
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
  for (auto& topic : topics_matching(st, sub.pattern))
    self->send(topic, del_dest_atom_v, sub.target);
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

std::vector<topic_actor> topics_matching(router_state& st,
                                         const std::string& pattern) {
  std::vector<topic_actor> result;
  st.topic_index.for_each_match(pattern, [&](const std::string& name) {
    result.push_back(st.topics.at(name));
  });
  return result;
}

router_actor::behavior_type router_actor_impl(router_pointer self,
                                              router_settings settings) {
  auto& st = self->state;
  st.topic_idle_timeout = settings.topic_idle_timeout;
  st.auto_create_groups = settings.auto_create_groups;
  st.group_defaults = settings.group_defaults;
  st.names = settings.session_context.names();
  st.max_topics = settings.session_context.limits.max_topics;
  st.max_groups = settings.session_context.limits.max_groups;
  auto session_ctx = settings.session_context;
  session_ctx.router = caf::actor_cast<router_actor>(self);
  st.group_ctx.message_ids = session_ctx.ids;
  st.group_ctx.delivery_ids = settings.delivery_ids;
  st.group_ctx.max_in_flight_limit = static_cast<uint32_t>(std::min<size_t>(
      session_ctx.limits.max_in_flight_per_session, UINT32_MAX));
  // Linked: the dead letter publisher stops with the router.
  st.group_ctx.dead_letters = self->spawn<caf::linked>(
      session_actor_impl, session_ctx, frame_sink_ptr{}, access_grant{});
  st.linked_children.insert(st.group_ctx.dead_letters.address());
  // A child's exit is handled by its down message (or ignored); any other
  // exit (the broker stopping) stops the router and, through the links,
  // its topics, groups and dead letter publisher.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (self->state.linked_children.erase(msg.source) == 0)
      self->quit(msg.reason);
  });
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (st.topic_names.count(msg.source) != 0)
      forget_topic(st, msg.source);
    else if (st.group_names.count(msg.source) != 0)
      forget_group(self, msg.source);
    else if (st.extensions.erase(msg.source) != 0)
      return;
    else
      forget_session(st, msg.source);
  });
  return {
      [self](resolve_atom, const std::string& name,
             session_actor session) -> caf::result<route_ref> {
        auto& st = self->state;
        if (st.topics.size() >= st.max_topics && st.topics.count(name) == 0)
          return make_caf_error(
              ec::limit_exceeded,
              "topic \"" + name +
                  "\" would be one more than limits.max_topics = " +
                  std::to_string(st.max_topics) +
                  " live topics (idle topics expire after topic_idle_timeout)");
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
      [self](join_atom, std::string group, std::string pattern,
             session_actor session, member_spec& spec) {
        return join_group(self, std::move(group), std::move(pattern),
                          std::move(session), std::move(spec));
      },
      [self](create_atom, std::string name, group_settings settings) {
        return create_group(self, std::move(name), std::move(settings));
      },
      [self](delete_atom, const std::string& name) {
        return delete_group(self, name);
      },
      [self](list_atom) { return list_groups(self); },
      [self](stats_atom) {
        auto& st = self->state;
        return router_stats{st.topics.size(), st.subscriptions.size(),
                            st.keys_by_session.size(), st.groups.size(),
                            mailbox_length(self)};
      },
      [self](stats_atom, const stats_query& query) {
        return describe_router(self, query);
      },
      [self](observe_atom, observable_actor actor) {
        observe_extension(self, std::move(actor));
      },
      [self](retire_atom, session_stats& final_counts) {
        // What an ended session still buffered is gone, not held.
        final_counts.buffered = 0;
        final_counts.buffered_bytes = 0;
        accumulate(self->state.ended_sessions, final_counts);
      },
  };
}

} // namespace tb
