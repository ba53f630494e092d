// Scenarios `delay`, `ttl` and `priority` of tinybroker-bench (issue 29):
// what message delays, TTLs and priorities cost and how well they keep
// their promises, each with one unary publisher and one reader.
//
// delay: a fan-out subscriber on bench.<run id>.>; N messages (default
//   20,000) each delayed by 200 to 1,100 ms (steps of 100 ms, the delay in
//   the payload). Reports publish msgs/s (the topic holds them) and each
//   message's lateness: its arrival minus (acceptance + delay), p50, p99,
//   max, and how many came over 20 ms late.
// ttl: the same subscriber; N messages with a TTL of 60 s (never expiring
//   here): publish and delivery msgs/s and end-to-end latency, and how
//   many the broker reported expired (none expected).
// priority: a fresh group without members holds N messages of priorities
//   0-9 (in rotation); then one worker joins and acks each frame. Reports
//   delivery msgs/s, latency from acceptance, and how often a delivery's
//   priority was higher than the one before it (0 with strict priority).

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "tools/bench_routing.hpp"

namespace tb::bench {

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

// Lateness above this counts as late (the broker's promise).
constexpr int64_t schedule_promise_ns = 20'000'000;

// The TTL of scenario ttl.
constexpr auto ttl = 60s;

// Returns the delay of message `i` of scenario delay: 200 to 1,100 ms.
std::chrono::milliseconds schedule_delay_of(uint64_t i) {
  return std::chrono::milliseconds(200 + 100 * ((i * 7919) % 10));
}

// Returns the wall clock in Unix nanoseconds (deliveries carry their
// acceptance time on it).
int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the reader saw.
struct reading {
  std::vector<int64_t> latency_ns; // lateness, for scenario delay
  uint64_t received = 0;
  uint64_t expired = 0;
  uint64_t inversions = 0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  bool broken = false;
};

// Reads deliveries from `session` until `n` arrived (or reported expired)
// or `deadline_ns`; acks group deliveries frame by frame.
void read_all(client::session& session, uint64_t n, int64_t deadline_ns,
              const std::string& scenario, reading& out) {
  uint32_t previous_priority = 10;
  while (out.received + out.expired < n && now_ns() < deadline_ns) {
    auto frame = session.next(100ms);
    if (!frame) {
      if (session.ended()) {
        out.broken = true;
        return;
      }
      continue;
    }
    if (frame->has_dropped()) {
      if (frame->dropped().reason() == "expired")
        out.expired += frame->dropped().count();
      continue;
    }
    if (!frame->has_deliveries())
      continue;
    auto wall = wall_ns();
    if (out.first_ns == 0)
      out.first_ns = now_ns();
    out.last_ns = now_ns();
    std::vector<uint64_t> acks;
    for (auto& d : frame->deliveries().deliveries()) {
      ++out.received;
      auto since = wall - d.accepted_unix_nanos();
      if (scenario == "delay") {
        auto delay_ms = std::strtoll(d.payload().c_str(), nullptr, 10);
        out.latency_ns.push_back(since - delay_ms * 1'000'000);
      } else {
        out.latency_ns.push_back(since);
      }
      if (d.priority() > previous_priority)
        ++out.inversions;
      previous_priority = d.priority();
      if (d.delivery_id() != 0)
        acks.push_back(d.delivery_id());
    }
    if (!acks.empty() && !session.ack(acks))
      out.broken = true;
  }
}

// Publishes `n` messages made by `make(i)` in unary batches of cfg.batch;
// returns the seconds it took, or a negative number on failure.
template <class Make>
double publish_scheduled(client::connection& conn, const run_config& cfg,
                         uint64_t n, Make make) {
  auto start = now_ns();
  std::vector<client::outgoing_message> batch;
  std::vector<pb::PublishResult> results;
  for (uint64_t i = 0; i < n; ++i) {
    batch.push_back(make(i));
    if (batch.size() < cfg.batch && i + 1 < n)
      continue;
    if (!conn.publish(batch, &results).ok())
      return -1;
    for (auto& r : results)
      if (r.has_error()) {
        errorf("RESOURCE_EXHAUSTED", "a message was refused: %s",
               r.error().message().c_str());
        return -1;
      }
    batch.clear();
  }
  return seconds_between(start, now_ns());
}

// Returns a payload of cfg.size bytes that starts with `text` and a NUL.
std::string payload(const run_config& cfg, const std::string& text) {
  auto result = text;
  result.push_back('\0');
  if (result.size() < cfg.size)
    result.resize(cfg.size, 'p');
  return result;
}

// Creates group `name` on `pattern` able to hold cfg.messages.
bool create_held_group(client::connection& conn, const run_config& cfg,
                       const std::string& name, const std::string& pattern) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  pb::CreateGroupRequest req;
  req.set_name(name);
  auto* settings = req.mutable_settings();
  settings->set_pattern(pattern);
  settings->set_max_pending_messages(2 * cfg.messages);
  settings->set_max_pending_bytes(4 * cfg.messages * (cfg.size + 64));
  pb::GroupInfo reply;
  auto status = conn.stub().CreateGroup(&ctx, req, &reply);
  if (!status.ok())
    errorf("UNAVAILABLE", "CreateGroup %s: %s", name.c_str(),
           status.error_message().c_str());
  return status.ok();
}

} // namespace

int run_schedule(client::connection& conn, const run_config& cfg) {
  const auto& scenario = cfg.scenario;
  auto run_id = random_run_id();
  auto topic = "bench." + run_id + ".t";
  auto pattern = "bench." + run_id + ".>";
  auto group = "bench-" + run_id;
  auto reader = conn.open_session();
  if (scenario == "priority") {
    if (!create_held_group(conn, cfg, group, pattern))
      return exit_usage;
  } else if (!reader->subscribe(subscription_id, pattern, "", 1) ||
             !await_subscribed(*reader, "subscribe")) {
    return exit_usage;
  }
  auto make = [&](uint64_t i) {
    client::outgoing_message msg;
    msg.topic = topic;
    if (scenario == "delay") {
      msg.delay = schedule_delay_of(i);
      msg.payload = payload(cfg, std::to_string(msg.delay.count()));
    } else {
      msg.payload = payload(cfg, "0");
      if (scenario == "ttl")
        msg.ttl = ttl;
      else
        msg.priority = static_cast<uint32_t>(i % 10);
    }
    return msg;
  };
  auto deadline = deadline_after(cfg, now_ns());
  reading seen;
  std::thread reading_thread;
  if (scenario != "priority")
    reading_thread = std::thread{[&] {
      read_all(*reader, cfg.messages, deadline, scenario, seen);
    }};
  auto publish_s = publish_scheduled(conn, cfg, cfg.messages, make);
  if (scenario == "priority" && publish_s >= 0) {
    // Everything is held: now a worker takes it all, highest first.
    auto credit = static_cast<uint32_t>(std::min<uint64_t>(cfg.messages, 1000));
    if (!reader->join(subscription_id, group, pattern, credit, 1) ||
        !await_subscribed(*reader, "join"))
      seen.broken = true;
    else
      read_all(*reader, cfg.messages, deadline, scenario, seen);
  }
  if (reading_thread.joinable())
    reading_thread.join();
  reader->close(2s);
  if (scenario == "priority")
    delete_group(conn, group);
  if (publish_s < 0 || seen.broken) {
    errorf("UNAVAILABLE", "publishing to or reading from %s failed",
           cfg.server.c_str());
    return exit_usage;
  }
  result_rows rows{cfg};
  rows.count("messages", "messages", cfg.messages);
  rows.number("publish msgs/s", "publish_msgs_per_s",
              rate(cfg.messages, publish_s), 0);
  rows.count("received", "received", seen.received);
  rows.number("delivery msgs/s", "delivery_msgs_per_s",
              rate(seen.received, seconds_between(seen.first_ns, seen.last_ns)),
              0);
  auto late = static_cast<uint64_t>(
      std::count_if(seen.latency_ns.begin(), seen.latency_ns.end(),
                    [](int64_t x) { return x > schedule_promise_ns; }));
  auto s = summarize_latency(seen.latency_ns);
  auto what =
      scenario == "delay" ? std::string{"lateness"} : std::string{"latency"};
  rows.number(what + " p50 (ms)", what + "_p50_ms", s.p50_us / 1e3, 3);
  rows.number(what + " p99 (ms)", what + "_p99_ms", s.p99_us / 1e3, 3);
  rows.number(what + " max (ms)", what + "_max_ms", s.max_us / 1e3, 3);
  if (scenario == "delay")
    rows.count("over 20 ms late", "over_20ms", late);
  if (scenario == "ttl")
    rows.count("reported expired", "expired", seen.expired);
  if (scenario == "priority")
    rows.count("priority inversions", "inversions", seen.inversions);
  rows.print();
  return seen.received + seen.expired == cfg.messages ? exit_ok : exit_lost;
}

} // namespace tb::bench
