// What `tinybroker-cli stats` shows of a Stats reply: the broker totals
// with latency percentiles estimated from the histogram, the tables of
// groups, members, topics, sessions and actors, the JSON object, and for
// `--watch` the rates between two replies and the groups by backlog.

#pragma once

#include <chrono>
#include <optional>
#include <ostream>
#include <string>

#include "tinybroker.pb.h"
#include "tools/cli/group_view.hpp"

namespace tb::cli {

/// A quantile estimated from a latency histogram.
struct quantile_estimate {
  /// The estimate in seconds.
  double seconds = 0;
  /// Set when the quantile lies beyond the last finite bucket bound: the
  /// latency is then more than `seconds`, by an unknown amount.
  bool beyond_last_bound = false;
};

/// Estimates quantile `q` (0 to 1) of `histogram` as Prometheus'
/// `histogram_quantile` does: finds the bucket that holds rank q * count
/// and interpolates linearly within it (the first bucket starts at 0).
/// Returns nothing when the histogram has no deliveries or no buckets.
std::optional<quantile_estimate>
estimate_quantile(const tinybroker::v1::LatencyHistogram& histogram, double q);

/// Formats an estimate: "1.25ms", ">10.00s" beyond the last bound, "-" for
/// none.
std::string format_quantile(const std::optional<quantile_estimate>& estimate);

/// A Stats reply and when it arrived.
struct stats_sample {
  /// The reply.
  tinybroker::v1::StatsReply reply;
  /// When it arrived, by this process's steady clock.
  std::chrono::steady_clock::time_point at;
};

/// Broker-wide rates per second between two replies.
struct broker_rates {
  /// Messages accepted per second.
  double published = 0;
  /// Deliveries written per second.
  double delivered = 0;
  /// Fan-out messages dropped per second.
  double dropped = 0;
};

/// Returns the seconds between two samples: by the broker's uptime when it
/// advanced, else by the local clock. Nothing when the broker restarted in
/// between (its uptime went back) or no time passed.
std::optional<double> seconds_between(const stats_sample& earlier,
                                      const stats_sample& later);

/// Returns the broker-wide rates from `earlier` to `later`; nothing when
/// `seconds_between` gives nothing or a counter went back (a restart).
std::optional<broker_rates> rates_between(const stats_sample& earlier,
                                          const stats_sample& later);

/// Fills the 1s received and acked rates of each group of `later` that the
/// broker left at zero in both windows although its counter moved since
/// `earlier` (a broker that does not compute rates), from that difference.
void fill_missing_group_rates(const stats_sample& earlier, stats_sample& later);

/// Returns the groups of `reply` with the one backing up most first: by
/// pending, then in flight, then oldest pending age (all descending), then
/// by name.
group_list by_backlog(const tinybroker::v1::StatsReply& reply);

/// How to show a Stats reply as text.
struct stats_view {
  /// The broker's address, for the title line.
  std::string server;
  /// Appended to the title line (a watch view's refresh time).
  std::string title_note;
  /// Print the members of every listed group.
  bool members = false;
  /// Print the topics table.
  bool topics = false;
  /// Print the sessions table.
  bool sessions = false;
  /// Print the actors table.
  bool actors = false;
  /// A `--watch` refresh: a rates line, groups by backlog, no blank lines
  /// inside the block.
  bool watch = false;
};

/// Prints `reply` as `view` says. `rates` fills the rates line of a watch
/// view (dashes when it is nothing: the first refresh).
void print_stats(std::ostream& out, const tinybroker::v1::StatsReply& reply,
                 const stats_view& view,
                 const std::optional<broker_rates>& rates = std::nullopt);

/// Returns `reply` as one line of JSON with the proto's field names
/// (numbers as JSON numbers; groups as `groups ls --json` writes them, with
/// their members).
std::string stats_json(const tinybroker::v1::StatsReply& reply);

} // namespace tb::cli
