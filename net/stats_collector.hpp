// Collects the Stats reply: asks the router, then every actor it names and
// every session actor, and adds up what they report. Counters live in each
// actor and are only added up here, on request: the hot path shares no
// counter between threads.
//
//   Stats call --> collector --stats--> router   (topics, groups, extensions)
//                      |------stats--> each group, listed topic, session
//                      +--> StatsReply (totals over all, lists filtered)

#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/protocol.hpp"
#include "routing/error.hpp"
#include "tinybroker.pb.h"

namespace tb {

/// Receives a finished Stats reply, or why there is none. Called exactly
/// once, on a CAF thread.
using stats_callback =
    std::function<void(tinybroker::v1::StatsReply& reply, const error_info&)>;

/// Keeps the broker's counters from going down between two Stats calls.
///
/// A session's final counts reach the router's totals a moment after the
/// session left the list of live streams; a call in that moment would see
/// totals dip, which a Prometheus counter must never do. Thread-safe.
class counter_floor {
public:
  /// Raises the counters of `sum` to the highest values reported so far, and
  /// remembers them.
  void apply(session_stats& sum);

private:
  std::mutex mutex_;
  session_stats high_;
};

struct auth_counters;

/// What every group holds, added up: the Stats reply's list of groups may
/// be cut, its broker counters have no message count of the groups.
struct group_totals {
  /// Messages held and not in flight.
  uint64_t pending = 0;
  /// Deliveries awaiting an answer.
  uint64_t in_flight = 0;
};

/// What the collector reads besides the actors.
struct stats_sources {
  /// The broker's actor system.
  caf::actor_system* sys = nullptr;
  /// The router.
  router_actor router;
  /// The session actors of the open streams.
  std::vector<session_actor> sessions;
  /// The unary publishers and the dead-letter publisher (their published
  /// counts belong to the broker totals).
  std::vector<session_actor> publishers;
  /// When the broker started.
  std::chrono::steady_clock::time_point started;
  /// Keeps totals monotonic across calls; none in tests that want raw sums.
  std::shared_ptr<counter_floor> floor;
  /// The refusals of the broker's door (net/auth_gate.hpp); none in tests.
  const auth_counters* auth = nullptr;
  /// The console's order (issue 27): groups most backed up first (pending
  /// plus in flight), sessions busiest first (published plus delivered),
  /// and the actors of every matching group and session, largest mailbox
  /// first, cut to the limit; by name (Stats' order) when false.
  bool by_load = false;
  /// Filled with the groups' totals if set (the console's overview).
  std::shared_ptr<group_totals> group_sums;
};

/// The most entries a list of the Stats reply holds.
constexpr uint32_t max_stats_limit = 10000;

/// The entries a list holds when the request names no limit.
constexpr uint32_t default_stats_limit = 100;

/// Collects the counters `request` asks for; calls `done` once. A request
/// that cannot be served (a bad topic pattern) fails with an error naming it.
void collect_stats(stats_sources sources,
                   const tinybroker::v1::StatsRequest& request,
                   stats_callback done);

} // namespace tb
