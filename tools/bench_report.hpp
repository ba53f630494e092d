// The results of a tinybroker-bench run: latency percentiles and the final
// table or JSON object.

#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tb::bench {

/// The settings of one run, as given on the command line.
struct run_config {
  /// The broker's address, `HOST:PORT`.
  std::string server;
  /// The scenario's name ("fanout").
  std::string scenario = "fanout";
  /// Messages to publish.
  uint64_t messages = 1'000'000;
  /// Payload bytes per message (at least 8: the send timestamp).
  std::size_t size = 128;
  /// Messages per publish frame.
  std::size_t batch = 256;
  /// Fan-out subscriber sessions.
  unsigned subscribers = 1;
  /// The most seconds the run may take.
  double max_seconds = 60;
  /// Also keep the publisher at most 64 frames ahead of the slowest
  /// subscriber, so that no subscription buffer overflows.
  bool paced = false;
  /// Print one JSON object instead of a table.
  bool json = false;
};

/// End-to-end latency percentiles, in microseconds.
struct latency_summary {
  /// Latency samples (deliveries measured).
  uint64_t samples = 0;
  /// Median.
  double p50_us = 0;
  /// 99th percentile.
  double p99_us = 0;
  /// 99.9th percentile.
  double p999_us = 0;
  /// Largest.
  double max_us = 0;
};

/// What one run measured.
struct run_result {
  /// The random id in the run's topic, `bench.<run id>.t`.
  std::string run_id;
  /// Seconds from the first publish to the end of the run.
  double elapsed_s = 0;
  /// Seconds from the first publish to the last confirm.
  double publish_s = 0;
  /// Seconds from the first publish to the last delivery.
  double deliver_s = 0;
  /// Messages written to the publish stream.
  uint64_t sent = 0;
  /// Messages the broker refused (confirm results or error frames).
  uint64_t publish_errors = 0;
  /// Deliveries, summed over subscribers.
  uint64_t received = 0;
  /// Messages the broker reported as dropped (Dropped frames), summed.
  uint64_t dropped = 0;
  /// Messages never delivered (`messages` - received, per subscriber).
  uint64_t missing = 0;
  /// Deliveries whose message id was not above the previous one's.
  uint64_t out_of_order = 0;
  /// True if the run hit --max-seconds.
  bool timed_out = false;
  /// End-to-end latency.
  latency_summary latency;
};

/// Computes the latency percentiles of `samples_ns` (nearest rank),
/// reordering it.
latency_summary summarize_latency(std::vector<int64_t>& samples_ns);

/// Returns `count` / `seconds`, or 0 when no time passed.
double rate(uint64_t count, double seconds);

/// Prints the result as an aligned two-column table.
void print_table(std::FILE* out, const run_config& cfg, const run_result& r);

/// Prints the result as one JSON object on one line.
void print_json(std::FILE* out, const run_config& cfg, const run_result& r);

} // namespace tb::bench
