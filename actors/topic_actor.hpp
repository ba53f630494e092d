// A topic: owns the route of one topic name (who gets its messages) and keeps
// the route caches of its publishing sessions up to date.
//
// Lifecycle:
//
//   spawned --> live --(no subscriber, no cacher)--> idle
//                 ^                                   |
//                 +------ attach / add_dest ----------+
//                                                     | topic_idle_timeout,
//                                                     v router says stop
//                                                   gone
//
// Publishers never send messages through the topic actor: they cache its
// route and send straight to the destinations, so one publisher's messages
// take one path and keep their order across topics (spec 4).

#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "actors/protocol.hpp"

namespace tb {

/// What a topic knows about one session that it monitors.
struct topic_session {
  /// The session.
  session_actor handle;
  /// True if the session caches this topic's route.
  bool caches = false;
  /// Subscriptions of this session the route delivers to.
  uint32_t subscriptions = 0;
};

/// State of a topic actor.
struct topic_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.topic";

  /// The topic name.
  std::string topic;
  /// The router, told when this topic becomes idle.
  router_actor router;
  /// The current route, shared with every cacher.
  route_ref current;
  /// Sessions that cache the route or receive from it.
  std::unordered_map<caf::actor_addr, topic_session> sessions;
  /// Bumped whenever the topic stops being idle, to void pending ticks.
  uint64_t idle_generation = 0;
  /// How long an idle topic waits before asking the router to stop it.
  std::chrono::milliseconds idle_timeout{60000};
};

/// The topic's handle type with its state.
using topic_pointer = topic_actor::stateful_pointer<topic_state>;

/// Runs the topic `name`, routing at first to `initial` targets and
/// `initial_groups`. Its route
/// versions start at `first_version`, which the router makes larger than
/// any version an earlier actor of the same topic could have reached, so a
/// session can always tell the newer of two routes.
topic_actor::behavior_type topic_actor_impl(
    topic_pointer self, std::string name, router_actor router,
    std::vector<fanout_target> initial, std::vector<group_actor> initial_groups,
    std::chrono::milliseconds idle_timeout, uint64_t first_version);

} // namespace tb
