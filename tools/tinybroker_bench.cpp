// tinybroker-bench: a load generator that measures a running broker.
// Scenario `fanout`: K subscribers, one publisher, end-to-end latency from
// the send time in each payload's first 8 bytes; the command line, the
// publisher and scenario `queue` (tools/bench_queue.cpp) live here too.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "net/client.hpp"
#include "tools/bench_report.hpp"

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;
using tb::bench::now_ns;
using tb::bench::seconds_between;

// Exit codes: all delivered, lost or timed out, usage or connection.
constexpr int exit_ok = 0;
constexpr int exit_lost = 1;
constexpr int exit_usage = 2;

// Every window-th frame asks for a confirm; before sending frame i the
// publisher waits for the confirm of any frame at or before i - window.
constexpr uint64_t window = 64;

// The subscription id every subscriber uses on its own stream.
constexpr uint64_t subscription_id = 1;

// One subscriber: its stream, counters (read by the progress thread) and
// latency samples (read after join).
struct subscriber {
  std::unique_ptr<tb::client::session> session;
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<bool> finished{false};
  uint64_t out_of_order = 0;
  int64_t last_delivery_ns = 0;
  bool broken = false;
  std::vector<int64_t> latencies;
  std::thread thread;
};

// Takes frames until `expected` messages were delivered or reported lost,
// the stream ends, or `stop` is set.
void run_subscriber(subscriber& sub, uint64_t expected,
                    const std::atomic<bool>& stop) {
  uint64_t received = 0;
  uint64_t dropped = 0;
  uint64_t last_id = 0;
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
        if (d.message_id() <= last_id)
          ++sub.out_of_order;
        last_id = d.message_id();
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

// Opens `sub`'s stream and subscribes it to `pattern`; false on failure.
bool start_subscriber(tb::client::connection& conn, subscriber& sub,
                      const std::string& pattern) {
  sub.session = conn.open_session();
  if (!sub.session->subscribe(subscription_id, pattern, "", 1))
    return false;
  std::vector<pb::ServerFrame> skipped;
  auto done = sub.session->wait_for(pb::ServerFrame::kSubscribed, 5s, &skipped);
  for (auto& frame : skipped)
    if (frame.has_error())
      std::fprintf(stderr, "tinybroker-bench: subscribe refused: %s\n",
                   frame.error().error().message().c_str());
  return done.has_value();
}

// Waits for the answer to the oldest of `pending` (request ids of frames
// that asked for a confirm); false on stream end or when `deadline_ns`
// passed.
bool await_confirm(tb::client::session& session, std::deque<uint64_t>& pending,
                   tb::bench::publish_stats& stats, int64_t deadline_ns) {
  while (!pending.empty()) {
    auto left = std::chrono::nanoseconds{deadline_ns - now_ns()};
    if (left <= 0ns)
      return false;
    auto frame = session.next(
        std::chrono::duration_cast<std::chrono::milliseconds>(left) + 1ms);
    if (!frame) {
      if (session.ended())
        stats.broken = true;
      if (stats.broken)
        return false;
      continue;
    }
    uint64_t answered = 0;
    if (frame->has_publish_confirm()) {
      answered = frame->publish_confirm().request_id();
      for (auto& result : frame->publish_confirm().results())
        if (result.has_error())
          ++stats.errors;
    } else if (frame->has_error()) {
      answered = frame->error().request_id();
      ++stats.errors;
      std::fprintf(stderr, "tinybroker-bench: publish refused: %s\n",
                   frame->error().error().message().c_str());
    } else {
      continue;
    }
    auto i = std::find(pending.begin(), pending.end(), answered);
    if (i == pending.end())
      continue;
    bool oldest = i == pending.begin();
    pending.erase(i);
    if (oldest)
      return true;
  }
  return true;
}

} // namespace

namespace tb::bench {

bool publish_messages(client::session& session, const run_config& cfg,
                      const std::string& topic, int64_t deadline_ns,
                      const std::function<uint64_t()>& consumed,
                      publish_stats& stats) {
  pb::ClientFrame frame;
  auto* msgs = frame.mutable_publish()->mutable_messages();
  for (std::size_t i = 0; i < cfg.batch; ++i) {
    auto* msg = msgs->Add();
    msg->set_topic(topic);
    msg->mutable_payload()->assign(cfg.size, 'x');
  }
  std::deque<uint64_t> pending; // request ids (frame index + 1) to confirm
  auto frames = (cfg.messages + cfg.batch - 1) / cfg.batch;
  for (uint64_t i = 0; i < frames; ++i) {
    while (!pending.empty() && pending.front() - 1 + window <= i)
      if (!await_confirm(session, pending, stats, deadline_ns))
        return false;
    while (cfg.paced && stats.sent.load() > consumed() &&
           stats.sent.load() - consumed() > window * cfg.batch) {
      if (now_ns() > deadline_ns)
        return false;
      std::this_thread::sleep_for(100us);
    }
    if (now_ns() > deadline_ns)
      return false;
    auto count = static_cast<int>(
        std::min<uint64_t>(cfg.batch, cfg.messages - i * cfg.batch));
    if (count < msgs->size())
      msgs->DeleteSubrange(count, msgs->size() - count);
    bool confirm = i % window == window - 1 || i + 1 == frames;
    frame.set_request_id(confirm ? i + 1 : 0);
    frame.mutable_publish()->set_confirm(confirm);
    auto sent_at = now_ns();
    uint64_t seq = i * cfg.batch;
    for (auto& msg : *msgs) {
      auto* payload = msg.mutable_payload()->data();
      std::memcpy(payload, &sent_at, sizeof sent_at);
      if (cfg.size >= 2 * sizeof seq)
        std::memcpy(payload + sizeof sent_at, &seq, sizeof seq);
      ++seq;
    }
    if (!session.send(frame)) {
      stats.broken = true;
      return false;
    }
    stats.sent.fetch_add(static_cast<uint64_t>(count));
    if (confirm)
      pending.push_back(i + 1);
  }
  while (!pending.empty())
    if (!await_confirm(session, pending, stats, deadline_ns))
      return false;
  return true;
}

} // namespace tb::bench

namespace {

// Runs scenario fanout; returns the exit code.
int run_fanout(tb::client::connection& conn, const tb::bench::run_config& cfg) {
  tb::bench::run_result result;
  result.run_id = tb::bench::random_run_id();
  auto prefix = "bench." + result.run_id;
  std::vector<std::unique_ptr<subscriber>> subs;
  for (unsigned i = 0; i < cfg.subscribers; ++i) {
    subs.push_back(std::make_unique<subscriber>());
    subs.back()->latencies.reserve(cfg.messages);
    if (!start_subscriber(conn, *subs.back(), prefix + ".>")) {
      std::fprintf(stderr, "tinybroker-bench: subscriber %u not subscribed\n",
                   i + 1);
      return exit_usage;
    }
  }
  auto publisher = conn.open_session();
  tb::bench::publish_stats pub;
  std::atomic<bool> stop_subscribers{false};
  for (auto& sub : subs)
    sub->thread = std::thread{[&, s = sub.get()] {
      run_subscriber(*s, cfg.messages, stop_subscribers);
    }};
  tb::bench::progress_printer progress{[&] { return pub.sent.load(); },
                                       [&] {
                                         uint64_t received = 0;
                                         for (auto& sub : subs)
                                           received += sub->received.load();
                                         return received;
                                       }};

  auto start = now_ns();
  auto deadline = start + static_cast<int64_t>(cfg.max_seconds * 1e9);
  auto slowest = [&] {
    uint64_t least = UINT64_MAX;
    for (auto& sub : subs)
      least = std::min(least, sub->received.load() + sub->dropped.load());
    return least;
  };
  bool published = tb::bench::publish_messages(*publisher, cfg, prefix + ".t",
                                               deadline, slowest, pub);
  auto publish_end = now_ns();
  auto all_finished = [&] {
    return std::all_of(subs.begin(), subs.end(),
                       [](auto& s) { return s->finished.load(); });
  };
  while (!all_finished() && now_ns() < deadline && !pub.broken)
    std::this_thread::sleep_for(2ms);
  result.timed_out = !all_finished() || (!published && !pub.broken);
  auto end = now_ns();
  stop_subscribers = true;
  for (auto& sub : subs)
    sub->thread.join();
  progress.stop();

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
  result.sent = pub.sent.load();
  result.publish_errors = pub.errors;
  result.elapsed_s = seconds_between(start, end);
  result.publish_s = seconds_between(start, publish_end);
  result.deliver_s = seconds_between(start, last_delivery);
  result.latency = tb::bench::summarize_latency(latencies);
  if (cfg.json)
    tb::bench::print_json(stdout, cfg, result);
  else
    tb::bench::print_table(stdout, cfg, result);
  std::fflush(stdout);

  publisher->close(2s);
  for (auto& sub : subs)
    sub->session->close(2s);
  if (broken) {
    std::fprintf(stderr, "tinybroker-bench: a stream to %s ended early\n",
                 cfg.server.c_str());
    return exit_usage;
  }
  bool complete = !result.timed_out && result.missing == 0 &&
                  result.dropped == 0 && result.publish_errors == 0;
  return complete ? exit_ok : exit_lost;
}

} // namespace

int main(int argc, char** argv) {
  tb::bench::run_config cfg;
  CLI::App app{
      "tinybroker-bench: measures a running tinybroker. One publisher "
      "session publishes N messages to bench.<run id>.t in frames of B, at "
      "most 64 frames unconfirmed; reports throughput and end-to-end "
      "latency.\n"
      "Scenario fanout: K subscriber sessions subscribe to bench.<run id>.>.\n"
      "Scenario queue: W worker sessions join a fresh group bench-<run id> "
      "on bench.<run id>.>, each acking every Deliveries frame with one Ack "
      "frame; checks each message arrived exactly once in total.\n"
      "Exit code: 0 all delivered, 1 messages lost, duplicated or timed "
      "out, 2 usage or connection error."};
  app.option_defaults()->always_capture_default();
  app.add_option("--server", cfg.server, "broker address HOST:PORT")
      ->required();
  app.add_option("--scenario", cfg.scenario, "the scenario")
      ->check(CLI::IsMember({"fanout", "queue"}));
  app.add_option("--messages", cfg.messages, "messages to publish (N)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000}));
  app.add_option("--size", cfg.size,
                 "payload bytes per message, at least 8 (the send time; "
                 "queue: at least 16, the sequence number follows)")
      ->check(CLI::Range(std::size_t{8}, std::size_t{16} << 20));
  app.add_option("--batch", cfg.batch, "messages per publish frame (B)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{65536}));
  app.add_option("--subscribers", cfg.subscribers,
                 "fanout: subscriber sessions (K)")
      ->check(CLI::Range(0u, 256u));
  app.add_option("--workers", cfg.workers, "queue: worker sessions (W)")
      ->check(CLI::Range(1u, 256u));
  app.add_option("--max-in-flight", cfg.max_in_flight,
                 "queue: each worker's max_in_flight (F)")
      ->check(CLI::Range(1u, 65536u));
  app.add_option("--max-seconds", cfg.max_seconds,
                 "give up after this many seconds (then exit 1)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--paced", cfg.paced,
               "also stay at most 64 frames ahead of the slowest subscriber "
               "(measures sustainable delivery without buffer overflow) or "
               "of the workers' acks");
  app.add_flag("--json", cfg.json, "print one JSON object, not a table");
  app.footer("Examples (1,000,000 x 128 B, batch 256):\n"
             "  S2: tinybroker-bench --server 127.0.0.1:7400 --subscribers 4\n"
             "  S3: tinybroker-bench --server 127.0.0.1:7400 --scenario queue "
             "--workers 4");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? exit_ok : exit_usage;
  }
  if (cfg.scenario == "queue" && cfg.size < 16) {
    std::fprintf(stderr, "tinybroker-bench: --scenario queue needs --size of "
                         "at least 16 (send time and sequence number)\n");
    return exit_usage;
  }

  tb::client::connection conn{cfg.server};
  if (!conn.wait_connected(5s)) {
    std::fprintf(stderr, "tinybroker-bench: cannot connect to %s\n",
                 cfg.server.c_str());
    return exit_usage;
  }
  if (cfg.scenario == "queue")
    return tb::bench::run_queue(conn, cfg);
  return run_fanout(conn, cfg);
}
