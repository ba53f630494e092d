// The gRPC side's log actor: refusals of calls and streams (which happen on
// gRPC threads, where no actor state is at hand), rate limited like a
// session's, and the periodic summary line.
//
//   gRPC handler --refused--> log actor --> "request refused ..." (limited)
//   timer --tick--> log actor --collect--> stats collector --> "summary ..."
//
// The summary timer is one delayed message per interval: an idle broker
// wakes once per interval for it, and not at all with the summary off.

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/limited_logs.hpp"
#include "actors/protocol.hpp"
#include "net/stats_collector.hpp"

namespace tb {

/// Writes the gRPC side's refusal lines and the periodic summary.
using log_actor =
    caf::typed_actor<caf::reacts_to<refused_atom, std::string, std::string,
                                    uint8_t, std::string>,
                     caf::reacts_to<log_tick_atom>, caf::reacts_to<tick_atom>>;

/// Starts a collection of the broker's counters (broker_service's
/// `collect_stats`); called by the log actor only.
using stats_source =
    std::function<void(const tinybroker::v1::StatsRequest&, stats_callback)>;

/// What the summary remembers from one line to the next. Callbacks of the
/// collector (CAF threads) update it, one at a time.
struct summary_memory {
  /// Guards the members: two collections may overlap when one is slow.
  std::mutex mutex;
  /// The counters of the previous line (zero before the first).
  tinybroker::v1::BrokerCounters previous;
  /// When the previous line was written (or the broker started).
  std::chrono::steady_clock::time_point previous_time =
      std::chrono::steady_clock::now();
};

/// State of the log actor.
struct log_actor_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.log";

  /// Refusals of calls and streams, rate limited per reason.
  refusal_log refusals;
  /// The summary's period; zero if it is off.
  std::chrono::milliseconds summary_interval{0};
  /// Collects the counters for the summary.
  stats_source collect;
  /// The previous summary.
  std::shared_ptr<summary_memory> memory = std::make_shared<summary_memory>();
};

/// The log actor's handle type with its state.
using log_pointer = log_actor::stateful_pointer<log_actor_state>;

/// Runs the log actor: a summary every `summary_interval` (none if zero)
/// from `collect`, and the refusal lines it is sent.
log_actor::behavior_type
log_actor_impl(log_pointer self, std::chrono::milliseconds summary_interval,
               stats_source collect);

/// Writes the summary line for `current` counters: the gauges as they are,
/// and published, delivered, dropped and refused since `previous`, over
/// `period`.
void log_summary(const tinybroker::v1::BrokerCounters& current,
                 const tinybroker::v1::BrokerCounters& previous,
                 std::chrono::steady_clock::duration period);

/// Reports the refusal of one call or stream to the log actor. Copyable,
/// so that a callback finishing the call later can carry it; callable from
/// any thread.
struct refusal_reporter {
  /// The log actor; nothing is reported without one.
  log_actor logger;
  /// The call refused (`Publish`, `CreateGroup`, `Session`, ...).
  std::string request;
  /// The client's address.
  std::string peer;

  /// Reports `err`; does nothing if it is no error.
  void operator()(const error_info& err) const;
};

} // namespace tb
