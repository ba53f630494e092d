// The router: owns the pattern trie and the directory of topic actors.
//
// Wildcards are resolved when a topic or a subscription appears, never per
// message: a new topic actor starts with the subscriptions the trie matches,
// and a new subscription is added to every existing topic it matches (found
// through a topic trie, not a scan). A subscribe is answered only after every
// affected topic has updated the route caches of its publishers, so every
// message accepted after the confirm reaches the new subscription.
//
//   session --sub--> router --add_dest--> topic --route--> publisher sessions
//        <---ok-----       <----ok-------       <---ok----

#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <caf/stateful_actor.hpp>

#include "actors/broker_context.hpp"
#include "actors/group_actor.hpp"
#include "actors/protocol.hpp"
#include "actors/routing/sublist.hpp"
#include "actors/routing/topic_tree.hpp"

namespace tb {

/// One entry of the pattern trie: a fan-out subscription or a group.
struct router_subscription {
  /// The pattern it was made with.
  std::string pattern;
  /// The subscriber's session and subscription id (fan-out only).
  fanout_target target;
  /// The group (groups only).
  group_actor group;
};

/// A consumer group as the router knows it.
struct router_group {
  /// The group actor.
  group_actor handle;
  /// Its settings.
  group_settings settings;
  /// Its key in the pattern trie.
  uint64_t key = 0;
};

/// What the router is started with.
struct router_settings {
  /// How long a topic with no subscribers and no publishers lives on.
  std::chrono::milliseconds topic_idle_timeout{60000};
  /// Whether joining an unknown group creates it with `group_defaults`.
  bool auto_create_groups = true;
  /// Settings of auto-created groups (and of omitted settings).
  group_settings group_defaults;
  /// The context of the session actor that publishes dead letters; the
  /// router fills in itself as its router.
  broker_context session_context;
  /// Gives group deliveries their ids.
  std::shared_ptr<id_sequence> delivery_ids = std::make_shared<id_sequence>();
};

/// State of the router actor.
struct router_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.router";

  /// Subscription keys by pattern.
  sublist patterns;
  /// Subscriptions by key.
  std::unordered_map<uint64_t, router_subscription> subscriptions;
  /// Subscription keys by session and subscription id.
  std::unordered_map<caf::actor_addr, std::unordered_map<uint64_t, uint64_t>>
      keys_by_session;
  /// Live topic actors by name.
  std::unordered_map<std::string, topic_actor> topics;
  /// Topic names by actor, to tell a stale down message from a live topic.
  std::unordered_map<caf::actor_addr, std::string> topic_names;
  /// Topics and groups linked to the router whose exit message is due.
  std::unordered_set<caf::actor_addr> linked_children;
  /// Consumer groups by name.
  std::unordered_map<std::string, router_group> groups;
  /// Group names by actor, to tell a stale down message from a live group.
  std::unordered_map<caf::actor_addr, std::string> group_names;
  /// What every group is started with.
  group_context group_ctx;
  /// Whether joining an unknown group creates it.
  bool auto_create_groups = true;
  /// Settings of auto-created groups.
  group_settings group_defaults;
  /// Limits of topic and pattern names.
  name_limits names;
  /// The most live topics (`limits.max_topics`).
  std::size_t max_topics = SIZE_MAX;
  /// The most groups (`limits.max_groups`).
  std::size_t max_groups = SIZE_MAX;
  /// The live topic names as a token trie, for matching new patterns.
  topic_tree topic_index;
  /// The next subscription key.
  uint64_t next_key = 1;
  /// Topic actors spawned so far; each starts its route versions at
  /// `spawned_topics << 32`, above any version of an earlier incarnation.
  uint64_t spawned_topics = 0;
  /// How long a topic with no subscribers and no publishers lives on.
  std::chrono::milliseconds topic_idle_timeout{60000};
  /// Extension actors listed in the Stats view, by address.
  std::unordered_map<caf::actor_addr, observable_actor> extensions;
};

/// The router's handle type with its state.
using router_pointer = router_actor::stateful_pointer<router_state>;

/// Runs the router.
router_actor::behavior_type router_actor_impl(router_pointer self,
                                              router_settings settings);

// -- internals shared by the router's source files ----------------------------

/// Returns the topic names the pattern matches among the live topics.
std::vector<topic_actor> topics_matching(router_state& st,
                                         const std::string& pattern);

/// Creates a group, or answers with the existing one if identical.
caf::result<group_info> create_group(router_pointer self, std::string name,
                                     group_settings settings);

/// Adds a member to a group, creating the group if allowed.
caf::result<group_actor> join_group(router_pointer self, std::string name,
                                    std::string pattern, session_actor session,
                                    member_spec spec);

/// Deletes a group; answers with how many messages it dropped.
caf::result<uint64_t> delete_group(router_pointer self,
                                   const std::string& name);

/// Answers with every group's info, sorted by name.
caf::result<std::vector<group_info>> list_groups(router_pointer self);

/// Answers a Stats query: the router's counters, the matching topics (the
/// first `limit` by name), every group and every extension actor.
caf::result<router_view> describe_router(router_pointer self,
                                         const stats_query& query);

/// Lists `actor` in the Stats view until it exits.
void observe_extension(router_pointer self, observable_actor actor);

/// Forgets a group that stopped or died: out of the trie and every topic.
void forget_group(router_pointer self, const caf::actor_addr& addr);

} // namespace tb
