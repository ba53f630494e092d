#include "actors/router/router_actor.hpp"

#include <chrono>

#include <memory>
#include <vector>

#include "actors/router/router_directory.hpp"
#include "actors/router/router_replicas.hpp"
#include "actors/session/session_actor.hpp"
#include "log/log.hpp"
#include "routing/pattern.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace {

// Returns the seed of `topic`: the fan-out targets and groups of every
// pattern matching it.
topic_seed seed_for(router_state& st, std::string topic) {
  std::vector<uint64_t> keys;
  st.patterns.match(topic, keys);
  topic_seed seed;
  seed.topic = std::move(topic);
  for (auto key : keys)
    if (auto i = st.subscriptions.find(key); i != st.subscriptions.end()) {
      if (i->second.group)
        seed.groups.push_back(i->second.group);
      else if (i->second.link)
        seed.links.push_back(i->second.link);
      else
        seed.fanout.push_back(i->second.target);
    }
  return seed;
}

// Answers the routes of `topics` for `session`: asks each shard for its
// topics (with their seeds, in case a shard does not hold a topic yet) and
// puts the answers back in the order of `topics`.
caf::result<route_list> resolve(router_pointer self,
                                std::vector<std::string> topics,
                                session_actor session) {
  auto& st = self->state;
  std::vector<std::vector<topic_seed>> seeds(st.shards.size());
  std::vector<std::vector<std::size_t>> positions(st.shards.size());
  for (std::size_t i = 0; i < topics.size(); ++i) {
    auto shard = shard_index(st, topics[i]);
    seeds[shard].push_back(seed_for(st, std::move(topics[i])));
    positions[shard].push_back(i);
  }
  std::size_t asked = 0;
  std::size_t only = 0;
  for (std::size_t k = 0; k < seeds.size(); ++k)
    if (!seeds[k].empty()) {
      ++asked;
      only = k;
    }
  if (asked == 1) // the usual case: one hop less
    return self->delegate(st.shards[only], attach_atom_v,
                          std::move(seeds[only]), std::move(session));
  auto promise = self->make_response_promise<route_list>();
  auto result = std::make_shared<route_list>(topics.size());
  auto remaining = std::make_shared<std::size_t>(asked);
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    if (seeds[k].empty())
      continue;
    self->request(st.shards[k], caf::infinite, attach_atom_v,
                  std::move(seeds[k]), session)
        .then(
            [promise, result, remaining,
             where = std::move(positions[k])](route_list& routes) mutable {
              for (std::size_t i = 0; i < routes.size(); ++i)
                (*result)[where[i]] = std::move(routes[i]);
              if (--*remaining == 0)
                promise.deliver(std::move(*result));
            },
            [promise](caf::error& err) mutable { promise.deliver(err); });
  }
  return promise;
}

} // namespace

std::size_t shard_index(const router_state& st, std::string_view topic) {
  return std::hash<std::string_view>{}(topic) % st.shards.size();
}

const topic_shard_actor& shard_of(const router_state& st,
                                  std::string_view topic) {
  return st.shards[shard_index(st, topic)];
}

std::vector<topic_shard_actor> shards_for(const router_state& st,
                                          const std::string& pattern) {
  if (is_literal_pattern(pattern))
    return {shard_of(st, pattern)};
  return st.shards;
}

router_actor::behavior_type router_actor_impl(router_pointer self,
                                              router_settings settings) {
  auto& st = self->state;
  st.auto_create_groups = settings.auto_create_groups;
  st.group_defaults = settings.group_defaults;
  st.names = settings.session_context.names();
  st.max_groups = settings.session_context.limits.max_groups;
  auto session_ctx = settings.session_context;
  session_ctx.router = caf::actor_cast<router_actor>(self);
  st.session_ctx = session_ctx;
  st.links = settings.links;
  st.interest_chunk = std::max<std::size_t>(settings.interest_chunk, 1);
  // Groups across nodes: this node's name and epoch in directory entries.
  st.node_name = settings.node_name;
  st.node_epoch = settings.node_epoch;
  if (st.node_epoch == 0)
    st.node_epoch = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count());
  st.config_groups = settings.config_groups;
  st.takeover_timeout = settings.takeover_timeout;
  st.group_ctx.message_ids = session_ctx.ids;
  st.group_ctx.delivery_ids = settings.delivery_ids;
  st.group_ctx.max_in_flight_limit = static_cast<uint32_t>(std::min<size_t>(
      session_ctx.limits.max_in_flight_per_session, UINT32_MAX));
  // Linked: the dead letter publisher stops with the router.
  st.group_ctx.dead_letters = self->spawn<caf::linked>(
      session_actor_impl, session_ctx, frame_sink_ptr{}, access_grant{});
  st.linked_children.insert(st.group_ctx.dead_letters.address());
  // Linked: the shards stop with the router.
  st.quota =
      std::make_shared<topic_quota>(settings.session_context.limits.max_topics);
  // The delayed fan-out messages of all shards count in one quota.
  delayed_limits delayed;
  delayed.per_topic =
      settings.session_context.limits.max_delayed_fanout_per_topic;
  delayed.quota = std::make_shared<topic_quota>(
      settings.session_context.limits.max_delayed_fanout);
  auto shard_count = std::max<std::size_t>(settings.topic_shards, 1);
  auto shard_dedup = settings.dedup;
  shard_dedup.max_ids =
      (settings.dedup.max_ids + shard_count - 1) / shard_count;
  for (std::size_t i = 0; i < shard_count; ++i) {
    auto shard =
        self->spawn<caf::linked>(topic_shard_impl, settings.topic_idle_timeout,
                                 st.quota, delayed, shard_dedup);
    st.linked_children.insert(shard.address());
    st.shards.push_back(std::move(shard));
  }
  // A child's exit is handled by its down message (or ignored); any other
  // exit (the broker stopping) stops the router and, through the links,
  // its shards, groups and dead letter publisher.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (self->state.linked_children.erase(msg.source) == 0)
      self->quit(msg.reason);
    else
      answer_dest_waits(self->state, msg.source); // a shard that ended
  });
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (auto g = st.group_names.find(msg.source); g != st.group_names.end()) {
      // A remote group ends with its node: the connection lost, or the
      // node stopping (SIGTERM: its groups end `user_shutdown` while the
      // connection still carries their down messages). Only a deleted
      // group ends normally (its owner also sends gdel).
      auto entry = st.groups.find(g->second);
      if (entry != st.groups.end() && !entry->second.owner.empty() &&
          msg.reason != caf::exit_reason::normal) {
        // Replicated: kept until the replica takes over (issue 32).
        if (replica_owner_lost(self, g->second))
          return;
        log::warn("group lost with its owner node: what it held is lost",
                  {{"group", g->second}, {"node", entry->second.owner}});
        ++st.groups_lost;
      }
      forget_group(self, msg.source);
    } else if (forget_replica(self, msg.source))
      return; // a replica this node kept ended
    else if (st.peers.count(msg.source) != 0)
      drop_peer(self, msg.source); // its node is gone
    else if (st.extensions.erase(msg.source) != 0)
      return;
    else
      forget_session(self, msg.source);
  });
  return {
      [self](resolve_atom, std::vector<std::string>& topics,
             session_actor session) {
        return resolve(self, std::move(topics), std::move(session));
      },
      [self](detach_atom, std::string& name, session_actor session) {
        auto& shard = shard_of(self->state, name);
        self->send(shard, detach_atom_v, std::move(name), std::move(session));
      },
      [self](sub_atom,
             fanout_subscriptions& subscriptions) -> caf::result<caf::ok_atom> {
        return subscribe(self, std::move(subscriptions));
      },
      [self](added_dest_atom, uint64_t ticket) { dest_added(self, ticket); },
      [self](unsub_atom, uint64_t subscription_id, session_actor session) {
        unsubscribe(self, session.address(), subscription_id);
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
      [self](purge_atom, const std::string& name) {
        return purge_group(self, name);
      },
      [self](list_atom) { return list_groups(self); },
      [self](find_atom, const std::string& name, const std::string& topic) {
        return find_group(self, name, topic);
      },
      [self](stats_atom) { return current_router_stats(self); },
      [self](stats_atom, const stats_query& query) {
        return describe_router(self, query);
      },
      [self](observe_atom, observable_actor actor) {
        observe_extension(self, std::move(actor));
      },
      [self](peer_up_atom, std::string& name, caf::actor& peer_router) {
        return peer_connected(self, std::move(name), std::move(peer_router));
      },
      [self](peer_down_atom, const std::string& name) {
        peer_disconnected(self, name);
      },
      [self](isync_atom, interest_sync& chunk) {
        return take_interest_sync(self, chunk);
      },
      [self](interest_atom, bool add,
             const std::vector<std::string>& patterns) {
        return take_interest_change(self, add, patterns);
      },
      [self](peers_atom) { return describe_peers(self); },
      [self](gcreate_atom, std::string& name, group_settings& settings,
             bool any_settings) {
        return take_group_create(self, std::move(name), std::move(settings),
                                 any_settings);
      },
      [self](gadd_atom, group_entry& entry) {
        return take_group_add(self, entry);
      },
      [self](gdel_atom, const std::string& name) {
        take_group_del(self, name);
        return caf::ok_atom_v;
      },
      [self](gsync_atom, group_entry_list& entries) {
        return take_group_sync(self, entries);
      },
      [self](stats_atom, cluster_atom) { return describe_directory(self); },
      [self](grepl_atom, const std::string& name,
             const group_settings& settings, uint64_t term,
             const std::string& owner) {
        return take_replica_request(self, name, settings, term, owner);
      },
      [self](replica_atom, const std::string& name, uint64_t term) {
        takeover_deadline(self, name, term);
      },
      [self](retire_atom, session_stats& final_counts) {
        // What an ended session still buffered is gone, not held.
        final_counts.buffered = 0;
        final_counts.buffered_bytes = 0;
        final_counts.requests.pending = 0; // dropped with their session
        accumulate(self->state.ended_sessions, final_counts);
      },
  };
}

} // namespace tb
