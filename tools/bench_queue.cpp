// Scenario `queue` of tinybroker-bench (S3, an acked work queue): W worker
// sessions join a fresh consumer group, P publishers publish N messages,
// each worker acks every Deliveries frame with one Ack frame. Each payload
// carries its send time and sequence number, so the workers together check
// that every message arrived exactly once, and measure end-to-end latency.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <unistd.h>

#include "client/connection.hpp"
#include "tools/bench_report.hpp"

namespace tb::bench {

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

// How often each sequence number arrived, shared by all workers.
struct tally {
  explicit tally(uint64_t n) : seen(new std::atomic<uint8_t>[n]()), size(n) {}

  // Counts one arrival of `seq`.
  void record(uint64_t seq) {
    if (seq >= size) {
      foreign.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // Saturates at 255 arrivals: enough to tell a duplicate.
    auto before = seen[seq].load(std::memory_order_relaxed);
    while (before < 255 && !seen[seq].compare_exchange_weak(before, before + 1))
      ;
    if (before == 0)
      unique.fetch_add(1, std::memory_order_relaxed);
  }

  std::unique_ptr<std::atomic<uint8_t>[]> seen;
  uint64_t size;
  // Distinct sequence numbers seen.
  std::atomic<uint64_t> unique{0};
  // Deliveries whose payload named no sequence number of this run (counted
  // as duplicates: a message delivered that was not owed).
  std::atomic<uint64_t> foreign{0};
};

// One worker: its stream, counters (read by the progress thread) and
// latency samples (read after join).
struct worker {
  std::unique_ptr<client::session> session;
  std::atomic<uint64_t> received{0};
  std::atomic<bool> finished{false};
  uint64_t redelivered = 0;
  uint64_t out_of_order = 0;
  int64_t last_ack_ns = 0;
  bool broken = false;
  std::vector<int64_t> latencies;
  std::thread thread;
};

// Takes deliveries, acking each Deliveries frame with one Ack frame, until
// every message of the run arrived somewhere, the stream ends, or `stop` is
// set.
void run_worker(worker& w, const run_config& cfg, tally& seen,
                const std::atomic<bool>& stop) {
  pb::ClientFrame ack;
  auto* ids = ack.mutable_ack()->mutable_delivery_ids();
  uint64_t received = 0;
  publish_order order{cfg};
  while (seen.unique.load(std::memory_order_relaxed) < seen.size &&
         !stop.load()) {
    auto frame = w.session->next(100ms);
    if (!frame) {
      if (w.session->ended()) {
        w.broken = true;
        break;
      }
      continue;
    }
    if (frame->has_unsubscribed() || frame->has_error()) {
      w.broken = true;
      break;
    }
    if (!frame->has_deliveries())
      continue;
    auto now = now_ns();
    ids->Clear();
    for (auto& d : frame->deliveries().deliveries()) {
      if (d.subscription_id() != subscription_id)
        continue;
      ids->Add(d.delivery_id());
      ++received;
      int64_t sent = 0;
      uint64_t seq = UINT64_MAX;
      if (d.payload().size() >= sizeof sent + sizeof seq) {
        std::memcpy(&sent, d.payload().data(), sizeof sent);
        std::memcpy(&seq, d.payload().data() + sizeof sent, sizeof seq);
      }
      seen.record(seq);
      if (d.attempt() > 1) {
        ++w.redelivered;
        continue;
      }
      if (order.out_of_order(d.message_id(), d.payload()))
        ++w.out_of_order;
      if (w.latencies.size() < seen.size)
        w.latencies.push_back(now - sent);
    }
    if (!ids->empty() && !w.session->send(ack)) {
      w.broken = true;
      break;
    }
    w.last_ack_ns = now_ns();
    w.received.store(received, std::memory_order_relaxed);
  }
  w.finished.store(true);
}

// Opens `w`'s stream, named `name` in the broker's stats, and joins
// `group` on `pattern`; false on failure.
bool start_worker(client::connection& conn, const run_config& cfg, worker& w,
                  const std::string& name, const std::string& group,
                  const std::string& pattern) {
  w.session = conn.open_session(name);
  if (!w.session->join(subscription_id, group, pattern, cfg.max_in_flight, 1))
    return false;
  return await_subscribed(*w.session, "join");
}

} // namespace

int run_queue(client::connection& conn, const run_config& cfg) {
  run_result result;
  result.run_id = random_run_id();
  auto topics = plan_topics(cfg, result.run_id);
  auto& pattern = topics.pattern;
  result.pattern = pattern;
  auto group = "bench-" + result.run_id;
  if (!create_group(conn, cfg, group, pattern))
    return exit_usage;
  tally seen{cfg.messages};
  std::vector<std::unique_ptr<worker>> workers;
  for (unsigned i = 0; i < cfg.workers; ++i) {
    workers.push_back(std::make_unique<worker>());
    workers.back()->latencies.reserve(cfg.messages / cfg.workers + 1);
    if (!start_worker(subscribe_connection(conn, cfg), cfg, *workers.back(),
                      "bench-worker-" + std::to_string(workers.size()), group,
                      pattern)) {
      errorf("UNAVAILABLE", "worker %u did not join", i + 1);
      delete_group(conn, group);
      return exit_usage;
    }
  }
  auto publishers = open_publishers(publish_connection(conn, cfg), cfg);
  publish_stats pub;
  std::atomic<bool> stop_workers{false};
  for (auto& w : workers)
    w->thread = std::thread{[&, p = w.get()] {
      run_worker(*p, cfg, seen, stop_workers);
    }};
  auto acked = [&] {
    uint64_t total = 0;
    for (auto& w : workers)
      total += w->received.load(std::memory_order_relaxed);
    return total;
  };
  progress_printer progress{[&] { return pub.sent.load(); }, acked};

  cpu_meter broker_cpu{cfg.broker_pid};
  cpu_meter own_cpu{getpid()};
  auto start = now_ns();
  auto deadline = start + static_cast<int64_t>(cfg.max_seconds * 1e9);
  bool published =
      run_publishers(publishers, cfg, topics, start, deadline, acked, pub);
  auto publish_end = now_ns();
  auto [timed_out, end] = finish_consumers(workers, deadline, published, pub,
                                           stop_workers, progress);
  result.timed_out = timed_out;

  bool broken = pub.broken;
  int64_t last_ack = start;
  std::vector<int64_t> latencies;
  latencies.reserve(cfg.messages);
  for (auto& w : workers) {
    broken = broken || w->broken;
    result.received += w->received.load();
    result.redelivered += w->redelivered;
    result.out_of_order += w->out_of_order;
    last_ack = std::max(last_ack, w->last_ack_ns);
    latencies.insert(latencies.end(), w->latencies.begin(), w->latencies.end());
    w->latencies = {};
  }
  for (uint64_t i = 0; i < seen.size; ++i) {
    auto n = seen.seen[i].load();
    if (n == 0)
      ++result.missing;
    else
      result.duplicates += n - 1u;
  }
  result.duplicates += seen.foreign.load();
  result.broker_cpu_s = broker_cpu.used();
  result.bench_cpu_s = own_cpu.used();
  report(cfg, pub, {start, publish_end, last_ack, end}, latencies, result);

  for (auto& session : publishers)
    session->close(2s);
  for (auto& w : workers)
    w->session->close(2s);
  delete_group(conn, group);
  if (broken) {
    errorf("UNAVAILABLE", "a stream to %s ended early", cfg.server.c_str());
    return exit_usage;
  }
  bool complete = !result.timed_out && result.missing == 0 &&
                  result.duplicates == 0 && result.publish_errors == 0;
  return complete ? exit_ok : exit_lost;
}

} // namespace tb::bench
