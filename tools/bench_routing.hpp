// The routing scenarios of tinybroker-bench (issue 15: routing state at
// scale) and what they share. tools/bench_routing.cpp holds topics-new and
// the subscribe scenarios, tools/bench_expiry.cpp expiry and topic-memory.

#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/connection.hpp"
#include "tools/bench_report.hpp"

namespace tb::bench {

/// The named results of one routing run, printed as an aligned table or as
/// one JSON object on one line.
class result_rows {
public:
  /// Starts with the scenario and server of `cfg`.
  explicit result_rows(const run_config& cfg);

  /// Adds a text value (a JSON string).
  void text(const std::string& label, const std::string& key,
            const std::string& value);

  /// Adds a count.
  void count(const std::string& label, const std::string& key, uint64_t value);

  /// Adds a number printed with `decimals` digits after the point.
  void number(const std::string& label, const std::string& key, double value,
              int decimals = 1);

  /// Adds a value written as is in JSON (an array, true, null).
  void raw(const std::string& label, const std::string& key,
           const std::string& json);

  /// Adds the broker's CPU seconds and microseconds per `unit` (e.g.
  /// "topic") over `units`, or nulls when `cpu_s` is below 0 (no
  /// --broker-pid).
  void cpu(double cpu_s, uint64_t units, const char* unit);

  /// Prints the rows to stdout: JSON when the run asked for it, else a
  /// table.
  void print() const;

private:
  struct row {
    std::string label;
    std::string key;
    std::string value;
    bool quoted;
  };

  bool json_;
  std::vector<row> rows_;
};

/// Returns `count` topics `bench.<run id>.<tag>.<i>` under the pattern
/// `bench.<run id>.<tag>.>`.
topic_plan fresh_topics(const std::string& run_id, const std::string& tag,
                        uint64_t count);

/// Opens a publisher session on `conn` and publishes one message to each
/// topic of `topics` (frames of cfg.batch, at most 64 unconfirmed, as
/// run_publishers does); returns the session, still open. `confirmed` says
/// whether every message was confirmed by `deadline_ns`.
std::unique_ptr<client::session>
publish_once(client::connection& conn, const run_config& cfg,
             const topic_plan& topics, int64_t deadline_ns,
             publish_stats& stats, bool& confirmed);

/// What a run of pipelined subscribes saw.
struct subscribe_log {
  /// now_ns() when the first subscribe was sent.
  int64_t start_ns = 0;
  /// now_ns() of each answer (Subscribed or refusal), in arrival order.
  std::vector<int64_t> answered_ns;
  /// Subscribes refused.
  uint64_t refused = 0;
  /// True if the stream ended first.
  bool ended = false;
  /// True if the deadline passed first.
  bool timed_out = false;
};

/// Subscribes `session` to `pattern_of(i)` as subscription `first_id + i`
/// (request id i + 1) for i below `count`, keeping at most cfg.in_flight
/// unanswered, until every one is answered or `deadline_ns` passed.
subscribe_log
subscribe_all(client::session& session, uint64_t count,
              const std::function<std::string(uint64_t)>& pattern_of,
              uint64_t first_id, const run_config& cfg, int64_t deadline_ns);

/// Returns the microseconds per answer from the `from`-th answer to the
/// `to`-th (0 counts from the first send) of `log`.
double us_per_answer(const subscribe_log& log, std::size_t from,
                     std::size_t to);

/// Takes frames from `session` until one of `kind` or an error frame
/// arrives; returns true for `kind`, false for an error, the stream's end
/// or `deadline_ns` passing.
bool await_answer(client::session& session, client::session::frame_kind kind,
                  int64_t deadline_ns);

/// The counts a Stats call returns.
struct broker_counts {
  /// Live topics.
  uint64_t topics = 0;
  /// Live topics matching the pattern asked for.
  uint64_t matched = 0;
  /// Live sessions.
  uint64_t sessions = 0;
};

/// Calls Stats, counting the live topics that match `pattern` (none when
/// empty); nothing if the call fails.
std::optional<broker_counts> count_live(client::connection& conn,
                                        const std::string& pattern = "");

/// Returns `start_ns` plus cfg.max_seconds.
int64_t deadline_after(const run_config& cfg, int64_t start_ns);

/// Runs topics-new: prints the result and returns the exit code.
int run_topics_new(client::connection& conn, const run_config& cfg);

/// Runs subscribe-rate: prints the result and returns the exit code.
int run_subscribe_rate(client::connection& conn, const run_config& cfg);

/// Runs subscribe-one-topic: prints the result and returns the exit code.
int run_subscribe_one_topic(client::connection& conn, const run_config& cfg);

/// Runs subscribe-wildcard: prints the result and returns the exit code.
int run_subscribe_wildcard(client::connection& conn, const run_config& cfg);

/// Runs expiry (tools/bench_expiry.cpp): prints the result and returns the
/// exit code.
int run_expiry(client::connection& conn, const run_config& cfg);

/// Runs topic-memory (tools/bench_expiry.cpp): prints the result and
/// returns the exit code.
int run_topic_memory(client::connection& conn, const run_config& cfg);

} // namespace tb::bench
