// The publishers of tinybroker-bench: each on its own Session stream and
// thread, publishing its share of the run's sequence numbers in batches,
// as fast as the broker confirms or at a fixed rate. At a fixed rate each
// payload carries the message's scheduled send time, so a publisher that
// falls behind does not hide the stall (no coordinated omission).

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <thread>

#include <sys/prctl.h>

#include "client/connection.hpp"
#include "client/msg_id.hpp"
#include "tools/bench_report.hpp"

namespace tb::bench {

namespace {

// Returns the msg_id prefix of this run: 8 random bytes, as an idempotent
// client's (client/msg_id.hpp).
const client::msg_id_prefix& bench_msg_id_prefix() {
  static const client::msg_id_prefix prefix = client::random_msg_id_prefix();
  return prefix;
}

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

// Every window-th frame asks for a confirm; before sending frame i the
// publisher waits for the confirm of any frame at or before i - window.
constexpr uint64_t window = 64;

// Waits for the answer to the oldest of `pending` (request ids of frames
// that asked for a confirm); false on stream end or when `deadline_ns`
// passed.
bool await_confirm(client::session& session, std::deque<uint64_t>& pending,
                   publish_stats& stats, int64_t deadline_ns) {
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
          stats.errors.fetch_add(1);
    } else if (frame->has_error()) {
      answered = frame->error().request_id();
      stats.errors.fetch_add(1);
      errorf("FAILED_PRECONDITION", "publish refused: %s",
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

// Makes `msgs` hold `count` messages of cfg.size payload bytes.
void resize_batch(google::protobuf::RepeatedPtrField<pb::Message>& msgs,
                  int count, const run_config& cfg) {
  if (count < msgs.size())
    msgs.DeleteSubrange(count, msgs.size() - count);
  while (msgs.size() < count)
    msgs.Add()->mutable_payload()->assign(cfg.size, 'x');
}

// Returns how many messages of a share starting at `done` are due at
// `now`: at most `left` and cfg.batch; as fast as possible, all of them.
uint64_t due_messages(const run_config& cfg, double per_publisher_rate,
                      int64_t start_ns, int64_t now, uint64_t done,
                      uint64_t left) {
  uint64_t most = std::min<uint64_t>(cfg.batch, left);
  if (per_publisher_rate <= 0)
    return most;
  auto elapsed = static_cast<double>(now - start_ns) / 1e9;
  auto due = static_cast<uint64_t>(elapsed * per_publisher_rate) + 1;
  return due > done ? std::min(most, due - done) : 0;
}

// Publishes the share of publisher `index` on `session`; see
// run_publishers.
bool publish_share(client::session& session, const run_config& cfg,
                   unsigned index, const topic_plan& topics, int64_t start_ns,
                   int64_t deadline_ns,
                   const std::function<uint64_t()>& consumed,
                   publish_stats& stats) {
  // Fine-grained sleeps, so a fixed rate is kept without spinning.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  auto first = share_begin(cfg, index);
  auto total = share_begin(cfg, index + 1) - first;
  auto rate = cfg.rate / cfg.publishers;
  auto ahead_limit = window * cfg.batch * cfg.publishers;
  pb::ClientFrame frame;
  auto* msgs = frame.mutable_publish()->mutable_messages();
  std::deque<uint64_t> pending; // request ids (frame index + 1) to confirm
  uint64_t done = 0;
  uint64_t i = 0; // frames sent
  while (done < total) {
    while (!pending.empty() && pending.front() - 1 + window <= i)
      if (!await_confirm(session, pending, stats, deadline_ns))
        return false;
    while (cfg.paced && stats.sent.load() > consumed() &&
           stats.sent.load() - consumed() > ahead_limit) {
      if (now_ns() > deadline_ns)
        return false;
      std::this_thread::sleep_for(100us);
    }
    if (rate > 0) {
      auto next_at = start_ns + static_cast<int64_t>(static_cast<double>(done) *
                                                     1e9 / rate);
      if (next_at > now_ns())
        std::this_thread::sleep_until(std::chrono::steady_clock::time_point{
            std::chrono::nanoseconds{next_at}});
    }
    auto now = now_ns();
    if (now > deadline_ns)
      return false;
    auto count = due_messages(cfg, rate, start_ns, now, done, total - done);
    if (count == 0)
      continue;
    resize_batch(*msgs, static_cast<int>(count), cfg);
    bool last = done + count == total;
    bool confirm = i % window == window - 1 || last;
    frame.set_request_id(confirm ? i + 1 : 0);
    frame.mutable_publish()->set_confirm(confirm);
    uint64_t seq = first + done;
    if (cfg.msg_ids && !cfg.msg_id_each) {
      // As an idempotent client: the frame's first id, its messages
      // numbered from it (Publish.msg_id_base).
      auto* base = frame.mutable_publish()->mutable_msg_id_base();
      base->resize(client::generated_msg_id_bytes);
      client::write_msg_id(bench_msg_id_prefix(), seq, base->data());
    }
    for (auto& msg : *msgs) {
      if (topics.names.size() > 1 || msg.topic().empty())
        msg.set_topic(topics.names[seq % topics.names.size()]);
      auto stamp =
          rate > 0
              ? start_ns + static_cast<int64_t>(
                               static_cast<double>(seq - first) * 1e9 / rate)
              : now;
      if (cfg.msg_ids && cfg.msg_id_each) {
        // As a user's own ids: 8 random bytes per run and the number, 15
        // bytes, written into the reused message (no allocation).
        auto* id = msg.mutable_msg_id();
        id->resize(client::generated_msg_id_bytes);
        client::write_msg_id(bench_msg_id_prefix(), seq, id->data());
      }
      auto* payload = msg.mutable_payload()->data();
      std::memcpy(payload, &stamp, sizeof stamp);
      if (cfg.size >= 2 * sizeof seq)
        std::memcpy(payload + sizeof stamp, &seq, sizeof seq);
      ++seq;
    }
    if (!session.send(frame)) {
      stats.broken = true;
      return false;
    }
    done += count;
    stats.sent.fetch_add(count);
    if (confirm)
      pending.push_back(i + 1);
    ++i;
  }
  while (!pending.empty())
    if (!await_confirm(session, pending, stats, deadline_ns))
      return false;
  return true;
}

} // namespace

topic_plan plan_topics(const run_config& cfg, const std::string& run_id) {
  topic_plan plan;
  if (cfg.topics <= 1) {
    plan.names.push_back("bench." + run_id + ".t");
    plan.pattern = "bench." + run_id + ".>";
    return plan;
  }
  plan.names.reserve(cfg.topics);
  for (unsigned i = 0; i < cfg.topics; ++i)
    plan.names.push_back("orders." + std::to_string(i) + ".created");
  plan.pattern = "orders.*.created";
  return plan;
}

uint64_t share_begin(const run_config& cfg, unsigned index) {
  // Below 2^64 for any --messages (at most 1e9) and --publishers (256).
  return cfg.messages * index / cfg.publishers;
}

unsigned publisher_of(const run_config& cfg, uint64_t seq) {
  auto index = static_cast<unsigned>(seq * cfg.publishers / cfg.messages);
  while (index + 1 < cfg.publishers && share_begin(cfg, index + 1) <= seq)
    ++index;
  while (index > 0 && share_begin(cfg, index) > seq)
    --index;
  return index;
}

publish_order::publish_order(const run_config& cfg)
    : cfg_(cfg), last_(cfg.publishers, 0), seen_(cfg.publishers, false) {}

bool publish_order::out_of_order(uint64_t message_id,
                                 const std::string& payload) {
  uint64_t key = message_id;
  unsigned publisher = 0;
  if (payload.size() >= 2 * sizeof key) {
    std::memcpy(&key, payload.data() + sizeof(int64_t), sizeof key);
    if (key >= cfg_.messages)
      return true;
    publisher = publisher_of(cfg_, key);
  }
  bool wrong = seen_[publisher] && key <= last_[publisher];
  seen_[publisher] = true;
  last_[publisher] = key;
  return wrong;
}

std::vector<std::unique_ptr<client::session>>
open_publishers(client::connection& conn, const run_config& cfg) {
  std::vector<std::unique_ptr<client::session>> sessions;
  for (unsigned i = 0; i < cfg.publishers; ++i)
    sessions.push_back(
        conn.open_session("bench-publisher-" + std::to_string(i + 1)));
  return sessions;
}

bool await_subscribed(client::session& session, const char* what) {
  std::vector<tinybroker::v1::ServerFrame> skipped;
  auto done = session.wait_for(tinybroker::v1::ServerFrame::kSubscribed,
                               std::chrono::seconds{5}, &skipped);
  for (auto& frame : skipped)
    if (frame.has_error())
      errorf("FAILED_PRECONDITION", "%s refused: %s", what,
             frame.error().error().message().c_str());
  return done.has_value();
}

bool run_publishers(std::vector<std::unique_ptr<client::session>>& sessions,
                    const run_config& cfg, const topic_plan& topics,
                    int64_t start_ns, int64_t deadline_ns,
                    const std::function<uint64_t()>& consumed,
                    publish_stats& stats) {
  std::vector<std::thread> threads;
  std::atomic<unsigned> finished{0};
  for (unsigned i = 0; i < sessions.size(); ++i)
    threads.emplace_back([&, i] {
      if (publish_share(*sessions[i], cfg, i, topics, start_ns, deadline_ns,
                        consumed, stats))
        finished.fetch_add(1);
    });
  for (auto& thread : threads)
    thread.join();
  return finished.load() == sessions.size();
}

} // namespace tb::bench
