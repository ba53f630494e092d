// Tests of when a consumer group's timers fire (spec 6, docs/semantics.md
// "Timing"): a nack's delay and ack_wait fire at their own due time, not at
// the next beat of a periodic tick, also with 100,000 timers pending, and
// the group keeps a bounded number of wake-ups pending, not one per
// message. In simulated time, stepped 1 ms at a time.

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/group/group_actor.hpp"
#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using strings = std::vector<std::string>;
using ids = std::vector<uint64_t>;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

/// A group "work" on "jobs.>", a publisher and two members whose
/// redeliveries are timed.
class GroupTimer : public group_test {
protected:
  /// Creates the group "work" with `wait` as its ack_wait.
  void create_work(milliseconds wait) {
    auto settings = group_settings("jobs.>");
    settings.ack_wait = wait;
    settings.max_deliveries = 0;
    create_group("work", settings);
  }

  /// Returns simulated milliseconds since the test started.
  int64_t now_ms() {
    return duration_cast<milliseconds>(sched.clock().now() - start).count();
  }

  /// Records the time of each redelivery `s` receives, by payload.
  void time_redeliveries(const test_session& s) {
    s.sink->on_write = [this](const pb::ServerFrame& frame) {
      for (auto& d : frame.deliveries().deliveries())
        if (d.attempt() > 1)
          redelivered_at[d.payload()].push_back(now_ms());
    };
  }

  /// Returns the pending wake-ups of the group "work".
  std::size_t wakes() {
    return deref<tb::group_state>(group("work")).wakes.size();
  }

  /// Steps 1 ms at a time for `total`, noting the most wake-ups pending.
  void step(milliseconds total) {
    for (milliseconds done{0}; done < total; done += 1ms) {
      advance(1ms);
      most_wakes = std::max(most_wakes, wakes());
    }
  }

  caf::actor_clock::time_point start = sched.clock().now();
  std::unordered_map<std::string, std::vector<int64_t>> redelivered_at;
  std::size_t most_wakes = 0;
  test_session pub = spawn_session();
  test_session a = spawn_session();
  test_session b = spawn_session();
};

/// The most wake-ups a group keeps pending.
constexpr std::size_t wake_bound = tb::wake_horizon / tb::wake_slack + 1;

TEST_F(GroupTimer, NackDelayFiresAtItsDueTimeNotAtATick) {
  create_work(30s); // a periodic tick would beat once a second
  join(a, 1, "work", "jobs.>");
  time_redeliveries(a);
  publish(pub, "jobs.a", 1);
  nack(a, {a.sink->deliveries().at(0).delivery_id()}, 200);
  step(199ms);
  EXPECT_TRUE(redelivered_at.empty());
  step(1ms);
  EXPECT_EQ(redelivered_at["m0"], (std::vector<int64_t>{200}));
}

TEST_F(GroupTimer, AckWaitFiresAtEachDeliverysOwnDeadline) {
  create_work(2500ms); // a tick of ack_wait / 10 would beat every 250 ms
  join(a, 1, "work", "jobs.>");
  join(b, 2, "work", "jobs.>");
  time_redeliveries(a);
  time_redeliveries(b);
  publish(pub, "jobs.a", 1, "x"); // at 0 to a
  step(100ms);
  publish(pub, "jobs.a", 1, "y"); // at 100 to b
  step(2501ms);
  EXPECT_EQ(redelivered_at["x0"], (std::vector<int64_t>{2500}));
  EXPECT_EQ(redelivered_at["y0"], (std::vector<int64_t>{2600}));
}

TEST_F(GroupTimer, OneHundredThousandPendingDelaysEachFireOnTime) {
  create_work(60s);
  join(a, 1, "work", "jobs.>", 50000);
  join(b, 2, "work", "jobs.>", 50000);
  time_redeliveries(a);
  time_redeliveries(b);
  for (int f = 0; f < 100; ++f)
    publish(pub, "jobs.a", 1000, std::to_string(f) + "-");
  ASSERT_EQ(counters("work").in_flight, 100000u);
  // 200 nacks, 500 deliveries each, each with its own delay, the longest
  // first: each nack's delay ends before every earlier one's.
  std::unordered_map<std::string, int64_t> due;
  int n = 0;
  for (auto* member : {&a, &b}) {
    auto got = member->sink->deliveries();
    for (size_t from = 0; from < got.size(); from += 500, ++n) {
      auto delay = static_cast<uint32_t>(3000 - 13 * n);
      ids batch;
      for (size_t k = from; k < from + 500; ++k) {
        batch.push_back(got[k].delivery_id());
        due[got[k].payload()] = now_ms() + delay;
      }
      send_frame(*member, nack_frame(next_request_id(), batch, true, delay));
    }
  }
  run();
  EXPECT_EQ(counters("work").pending, 100000u);
  step(3001ms);
  ASSERT_EQ(redelivered_at.size(), 100000u);
  int64_t latest = 0;
  for (auto& [payload, when] : redelivered_at) {
    ASSERT_EQ(when.size(), 1u) << payload;
    latest = std::max(latest, when[0] - due.at(payload));
    ASSERT_GE(when[0], due.at(payload)) << payload;
  }
  // Each within the slack of a pending wake-up (a due time at most 2 ms
  // before one adds none), far inside the 20 ms the docs promise.
  EXPECT_LE(latest, tb::wake_slack.count());
  EXPECT_LE(most_wakes, wake_bound);
}

TEST_F(GroupTimer, ExpiriesAtScaleEachFireOnTime) {
  create_work(1000ms);
  join(a, 1, "work", "jobs.>", 20000); // holds all, answers none
  std::unordered_map<std::string, int64_t> due;
  for (int f = 0; f < 20; ++f) {
    publish(pub, "jobs.a", 1000, std::to_string(f) + "-");
    for (int k = 0; k < 1000; ++k)
      due[std::to_string(f) + "-" + std::to_string(k)] = now_ms() + 1000;
    step(7ms);
  }
  join(b, 2, "work", "jobs.>", 20000); // gets the redeliveries
  time_redeliveries(b);
  step(1000ms);
  ASSERT_EQ(redelivered_at.size(), 20000u);
  for (auto& [payload, when] : redelivered_at)
    ASSERT_EQ(when.at(0), due.at(payload)) << payload;
  EXPECT_LE(most_wakes, wake_bound);
}

TEST_F(GroupTimer, ShrinkingDelaysKeepTheWakeUpsBounded) {
  create_work(60s);
  join(a, 1, "work", "jobs.>", 4000);
  time_redeliveries(a);
  publish(pub, "jobs.a", 4000);
  auto got = a.sink->deliveries();
  // Every nack is due 1 ms before the one before it: a timer per message
  // would keep 4000 pending.
  for (uint32_t k = 0; k < 4000; ++k) {
    send_frame(a, nack_frame(next_request_id(), {got[k].delivery_id()}, true,
                             4000 - k));
    run();
    most_wakes = std::max(most_wakes, wakes());
  }
  EXPECT_LE(most_wakes, wake_bound);
  step(4001ms);
  EXPECT_EQ(redelivered_at.size(), 4000u);
  for (uint32_t k = 0; k < 4000; ++k) {
    auto& when = redelivered_at["m" + std::to_string(k)];
    ASSERT_EQ(when.size(), 1u);
    // Within the slack of a pending wake-up, never early.
    EXPECT_GE(when[0], 4000 - static_cast<int64_t>(k));
    EXPECT_LE(when[0], 4000 - static_cast<int64_t>(k) + tb::wake_slack.count());
  }
  EXPECT_LE(wakes(), 1u); // the deadlines of what is in flight
}

} // namespace
} // namespace tb::test
