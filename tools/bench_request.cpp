// Scenario request of tinybroker-bench: request/reply round trips at a
// fixed rate. One responder session subscribes to bench.<run id>.rr and
// answers every request with its payload; one caller session sends
// --messages Request frames at --rate (open loop: request i is due at
// start + i / rate, and its round trip counts from then, so a broker that
// falls behind shows it), and takes the Response frames on another thread.
// Prints the round trip's p50/p99 and the replies per second
// (docs/performance.md, "Request/reply").

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <thread>
#include <vector>

#include "client/connection.hpp"
#include "client/session.hpp"
#include "tools/bench_report.hpp"

namespace tb::bench {

namespace {

namespace pb = tinybroker::v1;

// Answers every request delivered to `session` with its own payload until
// `stop`; counts what it answered.
void respond(client::session& session, const std::atomic<bool>& stop,
             std::atomic<uint64_t>& answered) {
  while (!stop.load()) {
    auto frame = session.next(std::chrono::milliseconds(50));
    if (!frame) {
      if (session.ended())
        return;
      continue;
    }
    for (auto& d : frame->deliveries().deliveries()) {
      if (d.reply_handle() == 0)
        continue;
      pb::ClientFrame out;
      out.mutable_reply()->set_reply_handle(d.reply_handle());
      out.mutable_reply()->set_payload(d.payload());
      session.send(out);
      ++answered;
    }
  }
}

} // namespace

int run_request(client::connection& conn, const run_config& cfg) {
  auto run_id = random_run_id();
  auto topic = "bench." + run_id + ".rr";
  auto responder =
      subscribe_connection(conn, cfg).open_session("bench-responder");
  responder->subscribe(subscription_id, topic, "", 1);
  if (!await_subscribed(*responder, "the responder's subscribe"))
    return exit_usage;
  auto caller = publish_connection(conn, cfg).open_session("bench-caller");
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> answered{0};
  std::thread responder_thread{[&] {
    respond(*responder, stop, answered);
  }};
  auto n = cfg.messages;
  auto rate = cfg.rate > 0 ? cfg.rate : 1000.0;
  std::vector<int64_t> due(n, 0);
  std::vector<int64_t> latencies;
  latencies.reserve(n);
  std::atomic<uint64_t> done{0};
  uint64_t errors = 0, no_responders = 0, timeouts = 0;
  auto start = now_ns() + 10'000'000; // 10 ms to set up
  auto deadline = start + static_cast<int64_t>(cfg.max_seconds * 1e9);
  std::thread reader{[&] {
    while (done.load() < n && now_ns() < deadline) {
      auto frame = caller->next(std::chrono::milliseconds(50));
      if (!frame) {
        if (caller->ended())
          return;
        continue;
      }
      if (frame->has_response()) {
        auto id = frame->response().request_id();
        if (id >= 1 && id <= n)
          latencies.push_back(now_ns() - due[id - 1]);
        ++done;
      } else if (frame->has_error()) {
        auto& err = frame->error().error();
        if (err.reason() == "no_responders")
          ++no_responders;
        else if (err.reason() == "request_timeout")
          ++timeouts;
        else
          ++errors;
        ++done;
      }
    }
  }};
  pb::ClientFrame frame;
  auto* req = frame.mutable_request();
  req->mutable_message()->set_topic(topic);
  req->set_timeout_ms(5000);
  std::string payload(cfg.size, 'x');
  req->mutable_message()->set_payload(payload);
  for (uint64_t i = 0; i < n; ++i) {
    due[i] = start + static_cast<int64_t>(static_cast<double>(i) * 1e9 / rate);
    auto wait = due[i] - now_ns();
    if (wait > 50'000)
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    frame.set_request_id(i + 1);
    if (!caller->send(frame))
      break;
  }
  reader.join();
  auto finished = now_ns();
  stop = true;
  responder_thread.join();
  caller->close();
  responder->close();
  auto summary = summarize_latency(latencies);
  auto elapsed = seconds_between(start, finished);
  auto replies = summary.samples;
  if (cfg.json)
    std::printf("{\"scenario\":\"request\",\"run_id\":\"%s\",\"rate\":%.0f,"
                "\"requests\":%" PRIu64 ",\"replies\":%" PRIu64
                ",\"no_responders\":%" PRIu64 ",\"timeouts\":%" PRIu64
                ",\"errors\":%" PRIu64 ",\"replies_per_second\":%.0f,"
                "\"p50_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,"
                "\"max_us\":%.1f}\n",
                run_id.c_str(), rate, n, replies, no_responders, timeouts,
                errors, static_cast<double>(replies) / elapsed, summary.p50_us,
                summary.p99_us, summary.p999_us, summary.max_us);
  else
    std::printf("scenario          request (round trips at %.0f/s)\n"
                "requests          %" PRIu64 "\n"
                "replies           %" PRIu64 " (%.0f/s)\n"
                "no responders     %" PRIu64 "\n"
                "timeouts          %" PRIu64 "\n"
                "errors            %" PRIu64 "\n"
                "round trip p50    %.1f us\n"
                "round trip p99    %.1f us\n"
                "round trip p99.9  %.1f us\n"
                "round trip max    %.1f us\n",
                rate, n, replies, static_cast<double>(replies) / elapsed,
                no_responders, timeouts, errors, summary.p50_us, summary.p99_us,
                summary.p999_us, summary.max_us);
  return replies == n ? exit_ok : exit_lost;
}

} // namespace tb::bench
