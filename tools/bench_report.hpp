// The pieces the scenarios of tinybroker-bench share: the run's results
// (the settings are in tools/bench_config.hpp), clocks, the publishers,
// progress lines, latency percentiles and the final table or JSON object.

#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tools/bench_config.hpp"

namespace tb::client {
class connection;
class session;
struct security_options;
} // namespace tb::client

namespace tb::bench {

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
  /// The pattern the subscribers or workers use.
  std::string pattern;
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
  /// Broker CPU seconds (user + system) over the run; -1 without
  /// --broker-pid.
  double broker_cpu_s = -1;
  /// CPU seconds the load generator itself used meanwhile (all its threads:
  /// publishers, subscribers and the client library's), so that its share
  /// of a shared machine is seen apart from the broker's.
  double bench_cpu_s = -1;
  /// End-to-end latency.
  latency_summary latency;
};

/// Makes `error` write one JSON object per error (`--json`) instead of a
/// text line.
void set_json_errors(bool on);

/// Writes an error on standard error: `tinybroker-bench: <message>`, or
/// with `--json` `{"error":{"code":"<code>","message":"<message>"}}`;
/// `code` is a gRPC status name (UNAVAILABLE, INVALID_ARGUMENT, ...).
void error(const char* code, const std::string& message);

/// `error` with a printf-style message.
void errorf(const char* code, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

/// Returns steady_clock's time in nanoseconds.
int64_t now_ns();

/// Returns seconds between two now_ns() values.
double seconds_between(int64_t from, int64_t to);

/// Returns 16 random hex digits.
std::string random_run_id();

/// Returns the resident memory of process `pid` in KiB (VmRSS of
/// /proc/PID/status), or -1 if it cannot be read.
long long resident_kib(int pid);

/// Returns the CPU time process `pid` used so far, user plus system, in
/// seconds (/proc/PID/stat), or -1 if it cannot be read.
double cpu_seconds(int pid);

/// Measures the CPU time a process uses from construction on.
class cpu_meter {
public:
  /// Starts measuring process `pid`; a pid of 0 measures nothing.
  explicit cpu_meter(int pid)
      : pid_(pid), start_(pid > 0 ? cpu_seconds(pid) : -1) {}

  /// Returns the CPU seconds used since construction, or -1 when nothing
  /// is measured or the process cannot be read.
  double used() const {
    auto now = start_ >= 0 ? cpu_seconds(pid_) : -1;
    return now >= 0 ? now - start_ : -1;
  }

private:
  int pid_;
  double start_;
};

/// What the publishers did; read by other threads while they run.
struct publish_stats {
  /// Messages written to the streams.
  std::atomic<uint64_t> sent{0};
  /// Messages refused (confirm results or error frames).
  std::atomic<uint64_t> errors{0};
  /// True if a stream ended early.
  std::atomic<bool> broken{false};
};

/// The topics of a run's messages: message `seq` goes to
/// `names[seq % names.size()]`.
struct topic_plan {
  /// The topic names, at least one.
  std::vector<std::string> names;
  /// The pattern that matches every name.
  std::string pattern;
};

/// Returns the topics of run `run_id`: `bench.<run id>.t` under
/// `bench.<run id>.>` for one topic, else `orders.<i>.created` under
/// `orders.*.created`.
topic_plan plan_topics(const run_config& cfg, const std::string& run_id);

/// Returns the first sequence number of publisher `index`'s share.
uint64_t share_begin(const run_config& cfg, unsigned index);

/// Returns the publisher whose share holds sequence number `seq`.
unsigned publisher_of(const run_config& cfg, uint64_t seq);

/// Tells deliveries that came out of their publisher's order: by the
/// sequence number in the payload (bytes 8-15) per publisher when the
/// payload has one, else by message id (one publisher only).
class publish_order {
public:
  /// Checks the deliveries of a run with settings `cfg`.
  explicit publish_order(const run_config& cfg);

  /// Returns true if the delivery of `message_id` with `payload` came
  /// before one it should follow, or names no sequence number of the run.
  bool out_of_order(uint64_t message_id, const std::string& payload);

private:
  const run_config& cfg_;
  std::vector<uint64_t> last_;
  std::vector<bool> seen_;
};

/// Waits up to 5 s for `session`'s Subscribed frame; prints any refusal
/// as `tinybroker-bench: <what> refused: ...`. False if none came.
bool await_subscribed(client::session& session, const char* what);

/// Opens cfg.publishers sessions; empty if the broker is unreachable.
std::vector<std::unique_ptr<client::session>>
open_publishers(client::connection& conn, const run_config& cfg);

/// Publishes every message of the run from `sessions` (one thread each),
/// scheduled from `start_ns`, and returns when all are confirmed; false on
/// stream end or when `deadline_ns` passed. Publisher p sends the sequence
/// numbers of its share in order, in frames of at most cfg.batch, asking
/// for a confirm every 64th frame and keeping at most 64 frames
/// unconfirmed. Payload bytes 0-7 hold the send time (now_ns(); at a fixed
/// rate the scheduled time start + i / rate, even when the publisher runs
/// late), bytes 8-15 (when there) the sequence number, 0 to N-1. With
/// cfg.paced, the publishers also stay at most 64 frames each ahead of
/// `consumed()`.
bool run_publishers(std::vector<std::unique_ptr<client::session>>& sessions,
                    const run_config& cfg, const topic_plan& topics,
                    int64_t start_ns, int64_t deadline_ns,
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

/// Waits until every consumer (a pointer to something with an atomic
/// `finished` and a `thread`) finished, `deadline_ns` passed or the
/// publishers broke; then sets `stop`, joins the consumers' threads and
/// stops `progress`. Returns whether the run timed out and when the wait
/// ended (now_ns()).
template <class Consumers>
std::pair<bool, int64_t>
finish_consumers(Consumers& consumers, int64_t deadline_ns, bool published,
                 const publish_stats& pub, std::atomic<bool>& stop,
                 progress_printer& progress) {
  auto all_finished = [&] {
    for (auto& c : consumers)
      if (!c->finished.load())
        return false;
    return true;
  };
  while (!all_finished() && now_ns() < deadline_ns && !pub.broken)
    std::this_thread::sleep_for(std::chrono::milliseconds{2});
  auto timed_out = !all_finished() || (!published && !pub.broken);
  auto end = now_ns();
  stop = true;
  for (auto& c : consumers)
    c->thread.join();
  progress.stop();
  return {timed_out, end};
}

/// Exit code: every message delivered as promised.
inline constexpr int exit_ok = 0;
/// Exit code: messages lost or duplicated, or the run timed out.
inline constexpr int exit_lost = 1;
/// Exit code: usage error, or a stream or call failed.
inline constexpr int exit_usage = 2;

/// The connection the run's publishers use: --publish-server's, else
/// `conn` (--server's).
inline client::connection& publish_connection(client::connection& conn,
                                              const run_config& cfg) {
  return cfg.publish_conn != nullptr ? *cfg.publish_conn : conn;
}

/// The connection the run's subscribers, workers and responders use:
/// --subscribe-server's, else `conn`.
inline client::connection& subscribe_connection(client::connection& conn,
                                                const run_config& cfg) {
  return cfg.subscribe_conn != nullptr ? *cfg.subscribe_conn : conn;
}

/// The connection subscriber `index` uses: with several --subscribe-server
/// addresses, the (index mod n)th, else `subscribe_connection(conn, cfg)`.
inline client::connection& subscribe_connection(client::connection& conn,
                                                const run_config& cfg,
                                                unsigned index) {
  if (!cfg.subscribe_conns.empty())
    return *cfg.subscribe_conns[index % cfg.subscribe_conns.size()];
  return subscribe_connection(conn, cfg);
}

/// Runs a fan-out scenario (S1, S2, S4, S5; tools/bench_fanout.cpp):
/// prints the result and returns the exit code.
int run_fanout(client::connection& conn, const run_config& cfg);

/// Runs scenario queue (S3; tools/bench_queue.cpp): prints the result and
/// returns the exit code (0 every message acked exactly once, 1 lost,
/// duplicated or timed out, 2 a stream or call failed).
int run_queue(client::connection& conn, const run_config& cfg);

/// Runs scenario request: request/reply round trips at cfg.rate (default
/// 1,000/s), one caller and one responder session (tools/bench_request.cpp);
/// returns 0 when every request got its reply.
int run_request(client::connection& conn, const run_config& cfg);

/// Runs scenario timers: how late a group's nack delays and ack_wait
/// expiries fire with `messages` of them pending (tools/bench_timers.cpp).
int run_timers(client::connection& conn, const run_config& cfg);

/// Runs scenario delay, ttl or priority (cfg.scenario): what delays, TTLs
/// and priorities cost and how late delayed messages come
/// (tools/bench_schedule.cpp).
int run_schedule(client::connection& conn, const run_config& cfg);

/// Runs scenario idle (tools/bench_memory.cpp): opens cfg.sessions
/// sessions with one subscription each and prints the broker's resident
/// memory before and after; returns the exit code. With
/// cfg.own_connections each session gets its own connection, made with
/// `security`.
int run_idle(client::connection& conn, const run_config& cfg,
             const client::security_options& security);

/// Runs scenario held (tools/bench_memory.cpp): publishes cfg.messages
/// messages to a fresh group without members and prints the broker's
/// resident memory before and after; returns the exit code.
int run_held(client::connection& conn, const run_config& cfg);

/// Creates group `name` on `pattern`, big enough to hold every message of
/// the run; false (after saying why) if the broker refuses.
bool create_group(client::connection& conn, const run_config& cfg,
                  const std::string& name, const std::string& pattern);

/// Deletes group `name`; returns the messages it still held.
uint64_t delete_group(client::connection& conn, const std::string& name);

/// Computes the latency percentiles of `samples_ns` (nearest rank),
/// reordering it.
latency_summary summarize_latency(std::vector<int64_t>& samples_ns);

/// Returns `s` as a JSON string literal, quotes included.
std::string json_string(const std::string& s);

/// Returns `count` / `seconds`, or 0 when no time passed.
double rate(uint64_t count, double seconds);

/// Prints the result as an aligned two-column table.
void print_table(std::FILE* out, const run_config& cfg, const run_result& r);

/// Prints the result as one JSON object on one line.
void print_json(std::FILE* out, const run_config& cfg, const run_result& r);

/// The times of a run, as now_ns() values.
struct run_times {
  /// When publishing started.
  int64_t start = 0;
  /// When the last publish was confirmed.
  int64_t publish_end = 0;
  /// When the last message arrived (or was acked).
  int64_t last_delivery = 0;
  /// When the wait for the consumers ended.
  int64_t end = 0;
};

/// Completes `r` with the publishers' counts, the times and the latency
/// percentiles of `latencies`, and prints it (JSON with cfg.json, else a
/// table) to stdout.
void report(const run_config& cfg, const publish_stats& pub,
            const run_times& times, std::vector<int64_t>& latencies,
            run_result& r);

} // namespace tb::bench
