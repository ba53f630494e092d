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

#include "actors/protocol.hpp"
#include "actors/routing/sublist.hpp"
#include "actors/routing/topic_tree.hpp"

namespace tb {

/// One fan-out subscription as the router knows it.
struct router_subscription {
  /// The pattern it was made with.
  std::string pattern;
  /// The subscriber's session and subscription id.
  fanout_target target;
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
  /// Topic actors linked to the router whose exit message is still due.
  std::unordered_set<caf::actor_addr> linked_topics;
  /// The live topic names as a token trie, for matching new patterns.
  topic_tree topic_index;
  /// The next subscription key.
  uint64_t next_key = 1;
  /// Topic actors spawned so far; each starts its route versions at
  /// `spawned_topics << 32`, above any version of an earlier incarnation.
  uint64_t spawned_topics = 0;
  /// How long a topic with no subscribers and no publishers lives on.
  std::chrono::milliseconds topic_idle_timeout{60000};
};

/// The router's handle type with its state.
using router_pointer = router_actor::stateful_pointer<router_state>;

/// Runs the router; topics it creates expire after `topic_idle_timeout`
/// without subscribers and publishers.
router_actor::behavior_type
router_actor_impl(router_pointer self,
                  std::chrono::milliseconds topic_idle_timeout);

} // namespace tb
