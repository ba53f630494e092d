// The pieces the scenarios of tinybroker-bench share: the run's settings
// and results, clocks, the publisher, progress lines, latency percentiles
// and the final table or JSON object.

#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tb::client {
class connection;
class session;
} // namespace tb::client

namespace tb::bench {

/// The settings of one run, as given on the command line.
struct run_config {
  /// The broker's address, `HOST:PORT`.
  std::string server;
  /// The scenario's name: "fanout" or "queue".
  std::string scenario = "fanout";
  /// Messages to publish.
  uint64_t messages = 1'000'000;
  /// Payload bytes per message (at least 8: the send timestamp).
  std::size_t size = 128;
  /// Messages per publish frame.
  std::size_t batch = 256;
  /// Fan-out subscriber sessions (scenario fanout).
  unsigned subscribers = 1;
  /// Group member sessions (scenario queue).
  unsigned workers = 4;
  /// Each worker's max_in_flight (scenario queue).
  uint32_t max_in_flight = 256;
  /// The most seconds the run may take.
  double max_seconds = 60;
  /// Also keep the publisher at most 64 frames ahead of the slowest
  /// subscriber (fanout: no subscription buffer overflows) or of the
  /// workers' acks (queue: the group holds little).
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
  /// Seconds from the first publish to the last delivery (queue: the last
  /// ack sent).
  double deliver_s = 0;
  /// Messages written to the publish stream.
  uint64_t sent = 0;
  /// Messages the broker refused (confirm results or error frames).
  uint64_t publish_errors = 0;
  /// Deliveries, summed over subscribers or workers (queue: each acked).
  uint64_t received = 0;
  /// Messages the broker reported as dropped (Dropped frames), summed.
  uint64_t dropped = 0;
  /// Messages never delivered (fanout: `messages` - received, per
  /// subscriber; queue: to no worker).
  uint64_t missing = 0;
  /// Queue: deliveries of a message beyond its first.
  uint64_t duplicates = 0;
  /// Queue: deliveries with attempt > 1.
  uint64_t redelivered = 0;
  /// Deliveries whose message id was not above the previous one's (per
  /// subscriber or worker; queue: first attempts only).
  uint64_t out_of_order = 0;
  /// True if the run hit --max-seconds.
  bool timed_out = false;
  /// End-to-end latency.
  latency_summary latency;
};

/// Returns steady_clock's time in nanoseconds.
int64_t now_ns();

/// Returns seconds between two now_ns() values.
double seconds_between(int64_t from, int64_t to);

/// Returns 16 random hex digits.
std::string random_run_id();

/// What a publisher did; `sent` is read by other threads.
struct publish_stats {
  /// Messages written to the stream.
  std::atomic<uint64_t> sent{0};
  /// Messages refused (confirm results or error frames).
  uint64_t errors = 0;
  /// True if the stream ended early.
  bool broken = false;
};

/// Publishes cfg.messages messages to `topic` on `session` in frames of
/// cfg.batch, asking for a confirm every 64th frame and keeping at most 64
/// frames unconfirmed. Payload bytes 0-7 hold the send time (now_ns()),
/// bytes 8-15 (when there) the message's sequence number, 0 to N-1. With
/// cfg.paced, also stays at most 64 frames ahead of `consumed()`. Returns
/// false on stream end or when `deadline_ns` passed.
bool publish_messages(client::session& session, const run_config& cfg,
                      const std::string& topic, int64_t deadline_ns,
                      const std::function<uint64_t()>& consumed,
                      publish_stats& stats);

/// Prints `sent X, received Y, Z msgs/s` to stderr every second until
/// stopped or destroyed.
class progress_printer {
public:
  /// Starts printing what `sent()` and `received()` return.
  progress_printer(std::function<uint64_t()> sent,
                   std::function<uint64_t()> received);

  /// Stops.
  ~progress_printer();

  /// Stops printing and joins the thread.
  void stop();

private:
  void run();

  std::function<uint64_t()> sent_;
  std::function<uint64_t()> received_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

/// Runs scenario queue against `conn` (tools/bench_queue.cpp): prints the
/// result and returns the exit code (0 every message acked exactly once,
/// 1 lost, duplicated or timed out, 2 a stream or call failed).
int run_queue(client::connection& conn, const run_config& cfg);

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
