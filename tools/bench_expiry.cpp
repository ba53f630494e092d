// Idle-topic scenarios of tinybroker-bench (issue 15). `expiry`: one
// session publishes once to each of N new topics and closes; then a probe
// session subscribes, unsubscribes and publishes to a new topic every 5 ms
// for --window seconds, while the N topics expire (start the broker with a
// short topic_idle_timeout), and reports the worst round trips.
// `topic-memory`: the broker's resident memory per topic, while the
// publisher of N new topics is connected and after it closed.

#include <algorithm>
#include <cstdio>
#include <thread>

#include "tools/bench_routing.hpp"

namespace tb::bench {

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

// How often the expiry probe starts a round: subscribe, unsubscribe,
// publish to a new topic.
constexpr int64_t probe_interval_ns = 5'000'000;

// The probe's round trips in nanoseconds, per request.
struct probe_samples {
  std::vector<int64_t> subscribe;
  std::vector<int64_t> unsubscribe;
  std::vector<int64_t> new_topic;
};

// Runs probe round `k` on `session`; false if a request failed or
// `deadline_ns` passed.
bool probe_once(client::session& session, const std::string& prefix, uint64_t k,
                int64_t deadline_ns, probe_samples& out) {
  auto id = std::to_string(k);
  auto t0 = now_ns();
  session.subscribe(k, prefix + "sub." + id, "", 3 * k);
  if (!await_answer(session, pb::ServerFrame::kSubscribed, deadline_ns))
    return false;
  auto t1 = now_ns();
  out.subscribe.push_back(t1 - t0);
  session.unsubscribe(k, 3 * k + 1);
  if (!await_answer(session, pb::ServerFrame::kUnsubscribed, deadline_ns))
    return false;
  auto t2 = now_ns();
  out.unsubscribe.push_back(t2 - t1);
  session.publish({{prefix + "new." + id, std::string(16, 'p'), {}, {}}}, true,
                  3 * k + 2);
  if (!await_answer(session, pb::ServerFrame::kPublishConfirm, deadline_ns))
    return false;
  out.new_topic.push_back(now_ns() - t2);
  return true;
}

// Adds the p50, p99 and max of `samples` in milliseconds; returns the max.
double add_round_trips(result_rows& rows, const std::string& what,
                       const std::string& key, std::vector<int64_t> samples) {
  auto summary = summarize_latency(samples);
  rows.number(what + " p50 (ms)", key + "_p50_ms", summary.p50_us / 1e3, 3);
  rows.number(what + " p99 (ms)", key + "_p99_ms", summary.p99_us / 1e3, 3);
  rows.number(what + " max (ms)", key + "_max_ms", summary.max_us / 1e3, 3);
  return summary.max_us / 1e3;
}

// Returns the live topics matching `pattern` as JSON: a count or null.
std::string live_json(client::connection& conn, const std::string& pattern) {
  auto live = count_live(conn, pattern);
  return live ? std::to_string(live->matched) : "null";
}

// Returns the growth from `before` to `after` KiB in bytes per `count`.
double bytes_per(long long before, long long after, uint64_t count) {
  return count > 0 ? static_cast<double>(after - before) * 1024.0 /
                         static_cast<double>(count)
                   : 0.0;
}

} // namespace

int run_expiry(client::connection& conn, const run_config& cfg) {
  auto run_id = random_run_id();
  auto topics = fresh_topics(run_id, "e", cfg.topics);
  auto start = now_ns();
  auto deadline = deadline_after(cfg, start);
  publish_stats pub;
  bool confirmed = false;
  auto publisher = publish_once(conn, cfg, topics, deadline, pub, confirmed);
  auto publish_s = seconds_between(start, now_ns());
  if (!confirmed || pub.errors > 0) {
    errorf("UNAVAILABLE", "the topics were not published");
    return pub.broken ? exit_usage : exit_lost;
  }
  auto live_before = live_json(conn, topics.pattern);
  publisher->close(10s);

  // From the close on, every topic of the run is idle.
  auto probe = conn.open_session();
  auto prefix = "bench." + run_id + ".probe.";
  cpu_meter broker_cpu{cfg.broker_pid};
  auto window_start = now_ns();
  auto window_end =
      std::min(deadline, window_start + static_cast<int64_t>(cfg.window * 1e9));
  probe_samples samples;
  bool failed = false;
  uint64_t rounds = 0;
  for (auto next = window_start; now_ns() < window_end && !failed;) {
    failed = !probe_once(*probe, prefix, ++rounds, deadline, samples);
    next = std::max(next + probe_interval_ns, now_ns());
    std::this_thread::sleep_for(std::chrono::nanoseconds{next - now_ns()});
  }
  auto window_s = seconds_between(window_start, now_ns());
  auto cpu_s = broker_cpu.used();

  result_rows rows{cfg};
  rows.text("pattern", "pattern", topics.pattern);
  rows.count("topics", "topics", cfg.topics);
  rows.number("publish (s)", "publish_s", publish_s, 3);
  rows.raw("live topics after publish", "live_topics_before", live_before);
  rows.number("window (s)", "window_s", window_s, 3);
  rows.count("probe rounds", "probes", samples.new_topic.size());
  auto worst =
      add_round_trips(rows, "subscribe", "subscribe", samples.subscribe);
  worst = std::max(worst, add_round_trips(rows, "unsubscribe", "unsubscribe",
                                          samples.unsubscribe));
  worst = std::max(worst, add_round_trips(rows, "new topic", "new_topic",
                                          samples.new_topic));
  rows.number("worst round trip (ms)", "worst_ms", worst, 3);
  rows.raw("live topics at the end", "live_topics_after",
           live_json(conn, topics.pattern));
  rows.cpu(cpu_s, cfg.topics, "topic");
  rows.raw("timed out", "timed_out", failed ? "true" : "false");
  rows.print();
  probe->close(10s);
  return failed ? exit_lost : exit_ok;
}

int run_topic_memory(client::connection& conn, const run_config& cfg) {
  auto before = resident_kib(cfg.broker_pid);
  auto baseline = count_live(conn);
  if (before < 0 || !baseline) {
    errorf("INVALID_ARGUMENT",
           "cannot read the memory of process %d "
           "(--broker-pid must name a broker on this host)",
           cfg.broker_pid);
    return exit_usage;
  }
  auto topics = fresh_topics(random_run_id(), "m", cfg.topics);
  auto start = now_ns();
  auto deadline = deadline_after(cfg, start);
  cpu_meter broker_cpu{cfg.broker_pid};
  publish_stats pub;
  bool confirmed = false;
  auto publisher = publish_once(conn, cfg, topics, deadline, pub, confirmed);
  auto publish_s = seconds_between(start, now_ns());
  auto cpu_s = broker_cpu.used();
  auto connected = resident_kib(cfg.broker_pid);
  auto live_connected = live_json(conn, topics.pattern);
  publisher->close(10s);
  publisher.reset();
  // The broker ends the publisher's session a moment after the close.
  for (auto now = count_live(conn);
       now && now->sessions > baseline->sessions && now_ns() < deadline;
       now = count_live(conn))
    std::this_thread::sleep_for(10ms);
  auto closed = resident_kib(cfg.broker_pid);

  result_rows rows{cfg};
  rows.text("pattern", "pattern", topics.pattern);
  rows.count("topics", "topics", cfg.topics);
  rows.number("publish (s)", "publish_s", publish_s, 3);
  rows.raw("broker RSS before (KiB)", "rss_before_kib", std::to_string(before));
  rows.raw("broker RSS connected (KiB)", "rss_connected_kib",
           std::to_string(connected));
  rows.raw("broker RSS closed (KiB)", "rss_closed_kib", std::to_string(closed));
  rows.number("bytes per topic, connected", "bytes_per_topic_connected",
              bytes_per(before, connected, cfg.topics), 0);
  rows.number("bytes per topic, closed", "bytes_per_topic_closed",
              bytes_per(before, closed, cfg.topics), 0);
  rows.raw("live topics, connected", "live_topics_connected", live_connected);
  rows.raw("live topics, closed", "live_topics_closed",
           live_json(conn, topics.pattern));
  rows.cpu(cpu_s, cfg.topics, "topic");
  rows.raw("timed out", "timed_out", confirmed ? "false" : "true");
  rows.print();
  if (pub.broken)
    return exit_usage;
  return confirmed && pub.errors == 0 ? exit_ok : exit_lost;
}

} // namespace tb::bench
