#include "actors/topic/topic_shard.hpp"

#include <algorithm>

#include "actors/meters.hpp"

namespace tb {

namespace {

// Creates the topic of `seed`, routing to what the router matched for it;
// returns null at limits.max_topics.
shard_topic* create_topic(topic_shard_pointer self, topic_seed& seed) {
  auto& st = self->state;
  if (!st.quota->try_acquire())
    return nullptr;
  auto first = std::make_shared<route>();
  first->topic = seed.topic;
  first->version = ++st.created << 32;
  first->fanout = fanout_list::from_vector(seed.fanout);
  first->groups = std::move(seed.groups);
  first->shard = self->address();
  first->dedup_window_ms = topic_dedup_window(st, first->groups);
  auto& topic = st.topics[seed.topic];
  if (!seed.links.empty())
    first->links = seed_links(topic, seed.links);
  topic.current = route_ref{std::move(first)};
  st.index.insert(seed.topic);
  for (auto& target : seed.fanout) {
    auto [entry, added] = st.sessions.try_emplace(target.session.address());
    if (added) {
      entry->second.handle = target.session;
      self->monitor(target.session);
    }
    ++entry->second.uses[&topic].subscriptions;
  }
  return &topic;
}

// Returns the stats of `topic`.
topic_stats stats_of(topic_shard_pointer self, const shard_topic& topic) {
  auto& r = *topic.current;
  return topic_stats{r.topic, r.fanout.size(), topic.cachers.size(),
                     r.groups.size(), mailbox_length(self)};
}

// Answers a Stats query: the matching topics, the first `limit` by name.
shard_view describe_shard(topic_shard_pointer self, const stats_query& query) {
  auto& st = self->state;
  shard_view view;
  view.live = st.topics.size();
  view.mailbox = mailbox_length(self);
  view.scheduled = st.delayed.size();
  view.scheduled_fired = st.delayed.fired();
  view.scheduled_refused = st.delayed.refused();
  view.next_due_unix_ms = next_due_unix_ms(self);
  view.duplicates = st.dedup->duplicates();
  view.dedup_ids = st.dedup->size();
  view.dedup_evicted = st.dedup->evicted();
  if (query.topic_pattern.empty())
    return view;
  std::vector<std::string> names;
  st.index.for_each_match(query.topic_pattern, [&](const std::string& name) {
    names.push_back(name);
  });
  view.matched = names.size();
  auto limit = std::min<std::size_t>(query.limit, names.size());
  std::partial_sort(names.begin(),
                    names.begin() + static_cast<std::ptrdiff_t>(limit),
                    names.end());
  view.topics.reserve(limit);
  for (std::size_t i = 0; i < limit; ++i)
    view.topics.push_back(stats_of(self, st.topics.at(names[i])));
  return view;
}

} // namespace

topic_shard_actor::behavior_type
topic_shard_impl(topic_shard_pointer self,
                 std::chrono::milliseconds idle_timeout,
                 std::shared_ptr<topic_quota> quota, delayed_limits delayed,
                 dedup_config dedup) {
  auto& st = self->state;
  st.idle_timeout = idle_timeout;
  st.quota = std::move(quota);
  st.delayed = delayed_fanout{delayed.per_topic, std::move(delayed.quota)};
  st.dedup_window = dedup.window;
  st.dedup = std::make_unique<dedup_table>(dedup.max_ids);
  self->set_down_handler(
      [self](caf::down_msg& msg) { shard_forget_session(self, msg.source); });
  return {
      [self](attach_atom, std::vector<topic_seed>& seeds,
             const session_actor& session) {
        auto& st = self->state;
        route_list routes;
        routes.reserve(seeds.size());
        for (auto& seed : seeds) {
          auto i = st.topics.find(seed.topic);
          auto* topic =
              i != st.topics.end() ? &i->second : create_topic(self, seed);
          if (topic == nullptr) {
            routes.emplace_back(); // refused: limits.max_topics
            continue;
          }
          add_cacher(self, *topic, session);
          routes.push_back(topic->current);
        }
        return routes;
      },
      [self](detach_atom, const std::string& name,
             const session_actor& session) {
        auto& st = self->state;
        auto i = st.topics.find(name);
        if (i == st.topics.end())
          return;
        auto& topic = i->second;
        auto addr = session.address();
        auto entry = st.sessions.find(addr);
        if (entry == st.sessions.end())
          return;
        auto use = entry->second.uses.find(&topic);
        if (use == entry->second.uses.end() || !use->second.caches)
          return;
        use->second.caches = false;
        auto& cachers = topic.cachers;
        cachers.erase(std::remove(cachers.begin(), cachers.end(), session),
                      cachers.end());
        release_use(self, addr, topic);
        update_idleness(self, topic);
      },
      [self](add_dest_atom, const fanout_subscriptions& subscriptions,
             uint64_t ticket) {
        shard_add_targets(self, subscriptions, ticket,
                          caf::actor_cast<caf::actor>(self->current_sender()));
      },
      [self](del_dest_atom, const std::string& pattern,
             const fanout_target& target) {
        shard_remove_target(self, pattern, target);
      },
      [self](add_group_atom, const std::string& pattern,
             const group_actor& group, uint64_t dedup_window_ms,
             const group_actor& replaces) {
        return shard_add_group(self, pattern, group,
                               std::chrono::milliseconds{dedup_window_ms},
                               replaces);
      },
      [self](del_group_atom, const std::string& pattern,
             const group_actor& group) {
        shard_remove_group(self, pattern, group);
      },
      [self](tick_atom) { expire_topics(self); },
      [self](stats_atom, const stats_query& query) {
        return describe_shard(self, query);
      },
      [self](schedule_atom, delayed_batch& batch) {
        return shard_schedule(self, batch);
      },
      [self](due_atom) { shard_fire_due(self); },
      [self](dedup_atom, dedup_query& query) {
        return shard_dedup(self, query);
      },
      [self](dedup_tick_atom) { shard_dedup_tick(self); },
      [self](add_link_atom, const std::vector<std::string>& patterns,
             const link_out_actor& link) {
        return shard_add_links(self, patterns, link);
      },
      [self](del_link_atom, const std::vector<std::string>& patterns,
             const link_out_actor& link) {
        shard_remove_links(self, patterns, link);
      },
      [self](drop_link_atom, const link_out_actor& link) {
        shard_drop_link(self, link);
      },
  };
}

} // namespace tb
