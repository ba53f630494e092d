// Scenario `timers` of tinybroker-bench (issue 26, point 10): how late a
// consumer group's timers fire with N of them pending (default 100,000).
//
// Phase "delay": W workers join a fresh group and nack each first delivery
// with a delay of 1.0 to 3.0 s (in steps of 100 ms); each redelivery's
// lateness is its arrival minus (the nack's send time + the delay), so it
// includes the nack's and the redelivery's trips.
// Phase "ack_wait": the W workers take N more messages and answer none; W
// more sessions join once they hold them all, and get the redeliveries when
// ack_wait (3 s) passes (the silent workers are stalled by then). Lateness
// is the redelivery's arrival minus (the first delivery's arrival +
// ack_wait): the trips of both deliveries only roughly cancel.
// Reports p50, p99 and max lateness of each phase, how many fired more than
// 20 ms late, and the most timers (pending + in flight) the group held.

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tools/bench_routing.hpp"

namespace tb::bench {

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

// The group's ack_wait.
constexpr uint32_t ack_wait_ms = 3000;

// The shortest nack delay; the longest is `delay_min_ms + 20 * 100`.
constexpr uint32_t delay_min_ms = 1000;

// Lateness above this counts as late (the broker's promise).
constexpr int64_t promise_ns = 20'000'000;

// What the sessions of a phase share.
struct phase_state {
  std::mutex mu;
  // When each message's redelivery is due, by message id.
  std::unordered_map<uint64_t, int64_t> due;
  // The lateness of each redelivery, in nanoseconds.
  std::vector<int64_t> lateness;
  std::atomic<uint64_t> first{0};
  std::atomic<uint64_t> redelivered{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> broken{false};
  // True in phase "delay": first deliveries are nacked; else held.
  bool nack = true;
};

// Returns the nack delay of the message `id`: 1.0 to 3.0 s.
uint32_t delay_of(uint64_t id) {
  return delay_min_ms + 100 * static_cast<uint32_t>((id * 7919) % 21);
}

// Takes deliveries on `session` until `st.stop`: first deliveries are
// nacked (phase delay) or held (phase ack_wait), redeliveries timed and
// acked.
void run_session(client::session& session, phase_state& st) {
  while (!st.stop.load()) {
    auto frame = session.next(50ms);
    if (!frame) {
      if (session.ended()) {
        st.broken = true;
        return;
      }
      continue;
    }
    if (!frame->has_deliveries())
      continue;
    auto now = now_ns();
    std::unordered_map<uint32_t, std::vector<uint64_t>> nacks;
    std::vector<uint64_t> acks;
    {
      std::lock_guard<std::mutex> guard{st.mu};
      for (auto& d : frame->deliveries().deliveries()) {
        if (d.attempt() == 1) {
          ++st.first;
          if (st.nack) {
            auto delay = delay_of(d.message_id());
            nacks[delay].push_back(d.delivery_id());
            st.due[d.message_id()] = now + int64_t{delay} * 1'000'000;
          } else {
            st.due[d.message_id()] = now + int64_t{ack_wait_ms} * 1'000'000;
          }
          continue;
        }
        acks.push_back(d.delivery_id());
        auto i = st.due.find(d.message_id());
        if (i != st.due.end() && d.attempt() == 2) {
          st.lateness.push_back(now - i->second);
          ++st.redelivered;
        }
      }
    }
    for (auto& [delay, ids] : nacks)
      if (!session.nack(ids, delay))
        st.broken = true;
    if (!acks.empty() && !session.ack(acks))
      st.broken = true;
  }
}

// Returns the group's timers: deliveries in flight plus messages held.
uint64_t timers_of(client::connection& conn, const std::string& group) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  pb::ListGroupsReply reply;
  if (!conn.stub().ListGroups(&ctx, {}, &reply).ok())
    return 0;
  for (auto& g : reply.groups())
    if (g.name() == group)
      return g.counters().pending() + g.counters().in_flight();
  return 0;
}

// Publishes `n` messages to `topic` in unary batches of `cfg.batch`.
bool publish_all(client::connection& conn, const run_config& cfg,
                 const std::string& topic, uint64_t n) {
  std::vector<client::outgoing_message> batch;
  for (uint64_t i = 0; i < n; ++i) {
    batch.push_back({topic, std::string(cfg.size, 't'), {}, {}});
    if (batch.size() < cfg.batch && i + 1 < n)
      continue;
    if (!conn.publish(batch).ok())
      return false;
    batch.clear();
  }
  return true;
}

// Opens `count` sessions joined to `group`, each with `max_in_flight`.
std::vector<std::unique_ptr<client::session>>
join_sessions(client::connection& conn, const std::string& group,
              const std::string& pattern, unsigned count,
              uint32_t max_in_flight) {
  std::vector<std::unique_ptr<client::session>> result;
  for (unsigned i = 0; i < count; ++i) {
    auto s = conn.open_session();
    if (!s->join(subscription_id, group, pattern, max_in_flight, 1) ||
        !await_subscribed(*s, "join"))
      return {};
    result.push_back(std::move(s));
  }
  return result;
}

// Adds the rows of one phase.
void add_phase(result_rows& rows, const std::string& name, phase_state& st,
               uint64_t messages) {
  auto late = std::count_if(st.lateness.begin(), st.lateness.end(),
                            [](int64_t x) { return x > promise_ns; });
  rows.count(name + " redeliveries", name + "_redelivered",
             st.redelivered.load());
  rows.count(name + " messages", name + "_messages", messages);
  auto s = summarize_latency(st.lateness);
  rows.number(name + " lateness p50 (ms)", name + "_late_p50_ms",
              s.p50_us / 1e3, 3);
  rows.number(name + " lateness p99 (ms)", name + "_late_p99_ms",
              s.p99_us / 1e3, 3);
  rows.number(name + " lateness max (ms)", name + "_late_max_ms",
              s.max_us / 1e3, 3);
  rows.count(name + " over 20 ms late", name + "_over_20ms",
             static_cast<uint64_t>(late));
}

// Runs one phase: starts a thread per session, publishes, waits until
// every message was redelivered (or the deadline); returns the most timers
// seen.
uint64_t run_phase(client::connection& conn, const run_config& cfg,
                   const std::string& group, const std::string& topic,
                   std::vector<std::unique_ptr<client::session>>& sessions,
                   std::vector<std::unique_ptr<client::session>>* late_joiners,
                   const std::string& pattern, phase_state& st,
                   int64_t deadline) {
  std::vector<std::thread> threads;
  for (auto& s : sessions)
    threads.emplace_back([&st, p = s.get()] { run_session(*p, st); });
  if (!publish_all(conn, cfg, topic, cfg.messages))
    st.broken = true;
  uint64_t most = 0;
  bool joined = late_joiners == nullptr;
  while (!st.broken && st.redelivered.load() < cfg.messages &&
         now_ns() < deadline) {
    most = std::max(most, timers_of(conn, group));
    if (!joined && st.first.load() >= cfg.messages) {
      *late_joiners =
          join_sessions(conn, group, pattern, cfg.workers,
                        static_cast<uint32_t>(cfg.messages / cfg.workers + 1));
      for (auto& s : *late_joiners)
        threads.emplace_back([&st, p = s.get()] { run_session(*p, st); });
      joined = true;
    }
    std::this_thread::sleep_for(50ms);
  }
  st.stop = true;
  for (auto& t : threads)
    t.join();
  return most;
}

} // namespace

int run_timers(client::connection& conn, const run_config& cfg) {
  auto run_id = random_run_id();
  auto group = "bench-" + run_id;
  auto pattern = "bench." + run_id + ".>";
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    pb::CreateGroupRequest req;
    req.set_name(group);
    auto* settings = req.mutable_settings();
    settings->set_pattern(pattern);
    settings->set_ack_wait_ms(ack_wait_ms);
    settings->set_unlimited_deliveries(true);
    settings->set_max_pending_messages(2 * cfg.messages);
    settings->set_max_pending_bytes(4 * cfg.messages * (cfg.size + 64));
    pb::GroupInfo reply;
    auto status = conn.stub().CreateGroup(&ctx, req, &reply);
    if (!status.ok()) {
      errorf("UNAVAILABLE", "CreateGroup %s: %s", group.c_str(),
             status.error_message().c_str());
      return exit_usage;
    }
  }
  auto per_worker = static_cast<uint32_t>(cfg.messages / cfg.workers + 1);
  auto workers = join_sessions(conn, group, pattern, cfg.workers, per_worker);
  if (workers.empty()) {
    errorf("UNAVAILABLE", "the workers did not join %s", group.c_str());
    delete_group(conn, group);
    return exit_usage;
  }
  auto start = now_ns();
  auto deadline = start + static_cast<int64_t>(cfg.max_seconds * 1e9);
  phase_state delays;
  auto most_delays = run_phase(conn, cfg, group, "bench." + run_id + ".d",
                               workers, nullptr, pattern, delays, deadline);
  phase_state expiries;
  expiries.nack = false;
  std::vector<std::unique_ptr<client::session>> takers;
  auto most_expiries = run_phase(conn, cfg, group, "bench." + run_id + ".e",
                                 workers, &takers, pattern, expiries, deadline);

  result_rows rows{cfg};
  rows.text("group", "group", group);
  rows.count("workers", "workers", cfg.workers);
  rows.count("ack_wait (ms)", "ack_wait_ms", ack_wait_ms);
  rows.count("most timers pending, delay", "delay_timers_max", most_delays);
  add_phase(rows, "delay", delays, cfg.messages);
  rows.count("most timers pending, ack_wait", "ack_wait_timers_max",
             most_expiries);
  add_phase(rows, "ack_wait", expiries, cfg.messages);
  bool complete = delays.redelivered.load() == cfg.messages &&
                  expiries.redelivered.load() == cfg.messages;
  rows.raw("timed out", "timed_out", complete ? "false" : "true");
  rows.print();
  for (auto& s : workers)
    s->close(2s);
  for (auto& s : takers)
    s->close(2s);
  delete_group(conn, group);
  if (delays.broken || expiries.broken) {
    errorf("UNAVAILABLE", "a stream to %s ended early", cfg.server.c_str());
    return exit_usage;
  }
  return complete ? exit_ok : exit_lost;
}

} // namespace tb::bench
