// Fan-out scenarios of tinybroker-bench: K subscriber sessions on one
// pattern take every message of P publishers. S1 (1 -> 1) and S2 (1 -> 4)
// publish to one topic as fast as the broker confirms; S4 publishes at a
// fixed rate and reports latency from each message's scheduled send time;
// S5 spreads the messages over `orders.<i>.created` under a subscriber on
// `orders.*.created`.

#include <algorithm>
#include <atomic>
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

// One subscriber: its stream, counters (read by the progress thread) and
// latency samples (read after join).
struct subscriber {
  std::unique_ptr<client::session> session;
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<bool> finished{false};
  uint64_t out_of_order = 0;
  int64_t last_delivery_ns = 0;
  bool broken = false;
  std::vector<int64_t> latencies;
  std::thread thread;
};

// Takes frames until `cfg.messages` were delivered or reported lost, the
// stream ends, or `stop` is set.
void run_subscriber(subscriber& sub, const run_config& cfg,
                    const std::atomic<bool>& stop) {
  uint64_t expected = cfg.messages;
  uint64_t received = 0;
  uint64_t dropped = 0;
  publish_order order{cfg};
  while (received + dropped < expected && !stop.load()) {
    auto frame = sub.session->next(100ms);
    if (!frame) {
      if (sub.session->ended()) {
        sub.broken = true;
        break;
      }
      continue;
    }
    if (frame->has_deliveries()) {
      auto now = now_ns();
      for (auto& d : frame->deliveries().deliveries()) {
        if (d.subscription_id() != subscription_id)
          continue;
        if (d.payload().size() >= sizeof(int64_t) &&
            sub.latencies.size() < expected) {
          int64_t sent = 0;
          std::memcpy(&sent, d.payload().data(), sizeof sent);
          sub.latencies.push_back(now - sent);
        }
        if (order.out_of_order(d.message_id(), d.payload()))
          ++sub.out_of_order;
        ++received;
      }
      sub.last_delivery_ns = now;
      sub.received.store(received, std::memory_order_relaxed);
    } else if (frame->has_dropped()) {
      dropped += frame->dropped().count();
      sub.dropped.store(dropped, std::memory_order_relaxed);
    } else if (frame->has_unsubscribed() || frame->has_error()) {
      sub.broken = true;
      break;
    }
  }
  sub.finished.store(true);
}

// Opens `sub`'s stream, named `name` in the broker's stats, and subscribes
// it to `pattern`; false on failure.
bool start_subscriber(client::connection& conn, subscriber& sub,
                      const std::string& name, const std::string& pattern) {
  sub.session = conn.open_session(name);
  if (!sub.session->subscribe(subscription_id, pattern, "", 1))
    return false;
  return await_subscribed(*sub.session, "subscribe");
}

} // namespace

int run_fanout(client::connection& conn, const run_config& cfg) {
  run_result result;
  result.run_id = random_run_id();
  auto topics = plan_topics(cfg, result.run_id);
  result.pattern = topics.pattern;
  std::vector<std::unique_ptr<subscriber>> subs;
  for (unsigned i = 0; i < cfg.subscribers; ++i) {
    subs.push_back(std::make_unique<subscriber>());
    subs.back()->latencies.reserve(cfg.messages);
    if (!start_subscriber(subscribe_connection(conn, cfg, i), *subs.back(),
                          "bench-subscriber-" + std::to_string(i + 1),
                          topics.pattern)) {
      errorf("UNAVAILABLE", "subscriber %u not subscribed", i + 1);
      return exit_usage;
    }
  }
  auto publishers = open_publishers(publish_connection(conn, cfg), cfg);
  publish_stats pub;
  std::atomic<bool> stop_subscribers{false};
  for (auto& sub : subs)
    sub->thread = std::thread{[&, s = sub.get()] {
      run_subscriber(*s, cfg, stop_subscribers);
    }};
  progress_printer progress{[&] { return pub.sent.load(); },
                            [&] {
                              uint64_t received = 0;
                              for (auto& sub : subs)
                                received += sub->received.load();
                              return received;
                            }};

  cpu_meter broker_cpu{cfg.broker_pid};
  cpu_meter own_cpu{getpid()};
  auto start = now_ns();
  auto deadline = start + static_cast<int64_t>(cfg.max_seconds * 1e9);
  auto slowest = [&] {
    uint64_t least = UINT64_MAX;
    for (auto& sub : subs)
      least = std::min(least, sub->received.load() + sub->dropped.load());
    return least;
  };
  bool published =
      run_publishers(publishers, cfg, topics, start, deadline, slowest, pub);
  auto publish_end = now_ns();
  auto [timed_out, end] = finish_consumers(subs, deadline, published, pub,
                                           stop_subscribers, progress);
  result.timed_out = timed_out;

  bool broken = pub.broken;
  int64_t last_delivery = start;
  std::vector<int64_t> latencies;
  latencies.reserve(cfg.messages * subs.size());
  for (auto& sub : subs) {
    broken = broken || sub->broken;
    auto received = sub->received.load();
    result.received += received;
    result.dropped += sub->dropped.load();
    result.missing += cfg.messages - std::min(received, cfg.messages);
    result.out_of_order += sub->out_of_order;
    last_delivery = std::max(last_delivery, sub->last_delivery_ns);
    latencies.insert(latencies.end(), sub->latencies.begin(),
                     sub->latencies.end());
    sub->latencies = {};
  }
  result.broker_cpu_s = broker_cpu.used();
  result.bench_cpu_s = own_cpu.used();
  report(cfg, pub, {start, publish_end, last_delivery, end}, latencies, result);

  for (auto& session : publishers)
    session->close(2s);
  for (auto& sub : subs)
    sub->session->close(2s);
  if (broken) {
    errorf("UNAVAILABLE", "a stream to %s ended early", cfg.server.c_str());
    return exit_usage;
  }
  bool complete = !result.timed_out && result.missing == 0 &&
                  result.dropped == 0 && result.publish_errors == 0;
  return complete ? exit_ok : exit_lost;
}

} // namespace tb::bench
