// Tests of time and order in a consumer group (issue 29, docs/semantics.md
// "TTL, delay and priority"): messages expire past their TTL or the group's
// max_age, delayed messages wait apart until due, and higher priorities go
// first. Messages go straight to the group actor with acceptance times on
// the simulated clock, so every due time and expiry is exact.

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "actors/group/group_actor.hpp"
#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using strings = std::vector<std::string>;
using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

/// The Unix time the simulated clock starts at, in nanoseconds.
constexpr int64_t unix_start = 1'700'000'000'000'000'000;

/// A group "work" on "jobs.>" whose clock of message times is the simulated
/// one, a member session and a session that reads its dead letters.
class GroupTime : public group_test {
protected:
  GroupTime() {
    deref<tb::router_state>(router).group_ctx.unix_now = [this] {
      return unix_now();
    };
  }

  /// Returns the simulated time as Unix nanoseconds.
  int64_t unix_now() {
    return unix_start +
           duration_cast<nanoseconds>(sched.clock().now() - start).count();
  }

  /// Returns simulated milliseconds since the test started.
  int64_t now_ms() {
    return duration_cast<milliseconds>(sched.clock().now() - start).count();
  }

  /// Creates "work" with `change` applied to the test's settings.
  template <class F>
  void create_work(F change) {
    auto settings = group_settings("jobs.>");
    change(settings);
    create_group("work", settings);
  }

  /// Creates "work" with the test's settings.
  void create_work() {
    create_work([](tb::group_settings&) {});
  }

  /// Makes a message accepted now with `payload` and `timing`.
  message_ref make(const std::string& payload, message_timing timing = {}) {
    return message_record::make(++next_id, unix_now(), "jobs.a", payload, "",
                                header_list{}, timing);
  }

  /// Hands `msgs` to "work" as the publish path would; returns the refused
  /// positions.
  std::vector<uint32_t> enqueue(std::vector<message_ref> msgs) {
    auto reply =
        query<tb::enqueue_reply>(group("work"), tb::enqueue_atom_v, msgs);
    return reply.refused;
  }

  /// Records the simulated time of each delivery `s` receives, by payload.
  void time_deliveries(const test_session& s) {
    s.sink->on_write = [this](const pb::ServerFrame& frame) {
      for (auto& d : frame.deliveries().deliveries())
        delivered_at[d.payload()].push_back(now_ms());
    };
  }

  /// Steps 1 ms at a time for `total`.
  void step(milliseconds total) {
    for (milliseconds done{0}; done < total; done += 1ms)
      advance(1ms);
  }

  /// Returns the state of "work".
  tb::group_state& work() {
    return deref<tb::group_state>(group("work"));
  }

  caf::actor_clock::time_point start = sched.clock().now();
  uint64_t next_id = 0;
  std::map<std::string, std::vector<int64_t>> delivered_at;
  test_session a = spawn_session();
  test_session dlq = spawn_session();
};

message_timing ttl(uint32_t ms) {
  return message_timing{ms, 0, 0};
}

message_timing delay(uint32_t ms) {
  return message_timing{0, ms, 0};
}

message_timing priority(uint8_t p) {
  return message_timing{0, 0, p};
}

// -- TTL
// ------------------------------------------------------------------------

TEST_F(GroupTime, WaitingMessagePastTtlIsDeadLetteredWithReasonExpired) {
  create_work();
  subscribe(dlq, 9, "$dlq.work");
  enqueue({make("short", ttl(500)), make("plain")});
  step(499ms);
  EXPECT_EQ(counters("work").expired_ttl, 0u);
  EXPECT_EQ(counters("work").pending, 2u);
  step(1ms);
  auto c = counters("work");
  EXPECT_EQ(c.expired_ttl, 1u);
  EXPECT_EQ(c.dead_lettered, 1u);
  EXPECT_EQ(c.pending, 1u);
  auto letters = dlq.sink->deliveries();
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0].payload(), "short");
  EXPECT_EQ(letters[0].headers().at("x-tinybroker-reason"), "expired");
  EXPECT_EQ(letters[0].headers().at("x-tinybroker-group"), "work");
  // The member that joins later gets only the message without a TTL.
  join(a, 1, "work", "jobs.>");
  EXPECT_EQ(a.sink->payloads(), strings{"plain"});
}

TEST_F(GroupTime, MaxAgeExpiresMessagesAndOnExpiryDropDropsThem) {
  create_work([](tb::group_settings& s) {
    s.max_age = 300ms;
    s.on_expiry = tb::expiry_action::drop;
  });
  subscribe(dlq, 9, "$dlq.work");
  enqueue({make("a"), make("b")});
  step(299ms);
  EXPECT_EQ(counters("work").pending, 2u);
  step(1ms);
  auto c = counters("work");
  EXPECT_EQ(c.expired_ttl, 2u);
  EXPECT_EQ(c.dropped, 2u);
  EXPECT_EQ(c.dead_lettered, 0u);
  EXPECT_EQ(c.pending, 0u);
  EXPECT_EQ(c.held_bytes, 0u);
  EXPECT_TRUE(dlq.sink->deliveries().empty());
}

TEST_F(GroupTime, TheEarlierOfTtlAndMaxAgeWins) {
  create_work([](tb::group_settings& s) { s.max_age = 1s; });
  enqueue({make("ttl", ttl(200))});
  step(200ms);
  EXPECT_EQ(counters("work").expired_ttl, 1u);
  enqueue({make("age", ttl(5000))});
  step(999ms);
  EXPECT_EQ(counters("work").expired_ttl, 1u);
  step(1ms);
  EXPECT_EQ(counters("work").expired_ttl, 2u);
}

TEST_F(GroupTime, InFlightPastTtlIsNotTakenBackButExpiresWhenNacked) {
  create_work();
  join(a, 1, "work", "jobs.>");
  enqueue({make("m", ttl(200))});
  ASSERT_EQ(a.sink->deliveries().size(), 1u);
  step(300ms);
  auto c = counters("work");
  EXPECT_EQ(c.in_flight, 1u);
  EXPECT_EQ(c.expired_ttl, 0u);
  nack(a, {a.sink->deliveries().at(0).delivery_id()});
  c = counters("work");
  EXPECT_EQ(c.expired_ttl, 1u);
  EXPECT_EQ(c.redelivered, 0u);
  EXPECT_EQ(c.pending + c.in_flight, 0u);
  EXPECT_EQ(a.sink->deliveries().size(), 1u);
}

TEST_F(GroupTime, InFlightPastTtlExpiresWhenAckWaitRunsOut) {
  create_work(); // ack_wait 1 s
  join(a, 1, "work", "jobs.>");
  enqueue({make("m", ttl(200))});
  step(1s);
  auto c = counters("work");
  EXPECT_EQ(c.expired, 1u); // the ack_wait timeout
  EXPECT_EQ(c.expired_ttl, 1u);
  EXPECT_EQ(c.redelivered, 0u);
  EXPECT_EQ(c.dead_lettered, 1u);
  EXPECT_EQ(a.sink->deliveries().size(), 1u);
}

TEST_F(GroupTime, MessageNackedWithADelayExpiresInsteadOfComingBack) {
  create_work();
  join(a, 1, "work", "jobs.>");
  enqueue({make("m", ttl(200))});
  nack(a, {a.sink->deliveries().at(0).delivery_id()}, 500);
  EXPECT_EQ(counters("work").scheduled, 1u);
  step(500ms);
  auto c = counters("work");
  EXPECT_EQ(c.expired_ttl, 1u);
  EXPECT_EQ(c.redelivered, 0u);
  EXPECT_EQ(c.scheduled, 0u);
}

// -- delayed delivery
// -----------------------------------------------------------

TEST_F(GroupTime, DelayedMessagesComeAtTheirDueTimeInDueOrder) {
  create_work();
  join(a, 1, "work", "jobs.>");
  time_deliveries(a);
  enqueue({make("300", delay(300)), make("100", delay(100)),
           make("200", delay(200)), make("now")});
  EXPECT_EQ(a.sink->payloads(), strings{"now"});
  step(99ms);
  EXPECT_EQ(a.sink->payloads(), strings{"now"});
  step(250ms);
  EXPECT_EQ(a.sink->payloads(), (strings{"now", "100", "200", "300"}));
  EXPECT_EQ(delivered_at["100"], std::vector<int64_t>{100});
  EXPECT_EQ(delivered_at["200"], std::vector<int64_t>{200});
  EXPECT_EQ(delivered_at["300"], std::vector<int64_t>{300});
}

TEST_F(GroupTime, APurgeDropsScheduledAndPrioritizedMessagesToo) {
  create_work();
  enqueue(
      {make("later", delay(300)), make("urgent", priority(7)), make("plain")});
  auto before = counters("work");
  ASSERT_EQ(before.pending, 3u);
  ASSERT_EQ(before.scheduled, 1u);
  EXPECT_EQ(query<uint64_t>(router, tb::purge_atom_v, std::string{"work"}), 3u);
  auto after = counters("work");
  EXPECT_EQ(after.pending, 0u);
  EXPECT_EQ(after.scheduled, 0u);
  EXPECT_EQ(after.held_bytes, 0u);
  join(a, 1, "work", "jobs.>");
  step(400ms);
  EXPECT_TRUE(a.sink->deliveries().empty()); // the delayed one never comes
}

TEST_F(GroupTime, EqualDueTimesKeepPublishOrder) {
  create_work();
  join(a, 1, "work", "jobs.>");
  std::vector<message_ref> msgs;
  strings expected;
  for (int i = 0; i < 50; ++i) {
    msgs.push_back(make(std::to_string(i), delay(100)));
    expected.push_back(std::to_string(i));
  }
  enqueue(std::move(msgs));
  step(99ms);
  EXPECT_TRUE(a.sink->payloads().empty());
  step(1ms);
  EXPECT_EQ(a.sink->payloads(), expected);
}

TEST_F(GroupTime, StatsShowScheduledCountAndNextDueTime) {
  create_work();
  enqueue({make("a", delay(250)), make("b", delay(100)), make("c")});
  auto c = counters("work");
  EXPECT_EQ(c.scheduled, 2u);
  EXPECT_EQ(c.pending, 3u);
  EXPECT_EQ(c.next_due_unix_ms, unix_start / 1'000'000 + 100);
  step(100ms);
  c = counters("work");
  EXPECT_EQ(c.scheduled, 1u);
  EXPECT_EQ(c.next_due_unix_ms, unix_start / 1'000'000 + 250);
  step(150ms);
  c = counters("work");
  EXPECT_EQ(c.scheduled, 0u);
  EXPECT_EQ(c.next_due_unix_ms, 0);
  EXPECT_EQ(c.pending, 3u);
}

TEST_F(GroupTime, ScheduledMessagesCountAgainstTheBounds) {
  create_work([](tb::group_settings& s) { s.max_pending_messages = 2; });
  EXPECT_TRUE(
      enqueue({make("a", delay(1000)), make("b", delay(1000))}).empty());
  EXPECT_EQ(counters("work").scheduled, 2u);
  EXPECT_EQ(enqueue({make("c")}), std::vector<uint32_t>{0});
  EXPECT_EQ(counters("work").refused, 1u);
}

TEST_F(GroupTime, DropOldestDropsAScheduledMessageWhenNothingElseWaits) {
  create_work([](tb::group_settings& s) {
    s.max_pending_messages = 2;
    s.overflow = tb::overflow_policy::drop_oldest;
    s.ack_wait = 10s;
  });
  enqueue({make("a", delay(1000)), make("b", delay(2000))});
  EXPECT_TRUE(enqueue({make("c")}).empty());
  auto c = counters("work");
  EXPECT_EQ(c.dropped, 1u);
  EXPECT_EQ(c.scheduled, 1u);
  join(a, 1, "work", "jobs.>");
  step(2s);
  EXPECT_EQ(a.sink->payloads(), (strings{"c", "b"}));
}

TEST_F(GroupTime, TtlOfADelayedMessageRunsFromItsDueTime) {
  create_work();
  enqueue({make("m", message_timing{100, 200, 0})});
  step(299ms);
  EXPECT_EQ(counters("work").expired_ttl, 0u);
  step(1ms);
  EXPECT_EQ(counters("work").expired_ttl, 1u);
}

TEST_F(GroupTime, ManyDueAtOnceAreReleasedInBoundedSlices) {
  create_work([](tb::group_settings& s) { s.max_pending_messages = 100000; });
  std::vector<message_ref> msgs;
  for (int i = 0; i < 10000; ++i)
    msgs.push_back(make("m", delay(100)));
  enqueue(std::move(msgs));
  EXPECT_EQ(work().ledger.scheduled(), 10000u);
  sched.advance_time(100ms); // the wake-up is in the mailbox, not yet run
  run_one(group("work"));
  EXPECT_EQ(work().ledger.scheduled(), 10000u - tb::schedule_slice);
  run(); // further wake-ups came at once and took the rest
  EXPECT_EQ(work().ledger.scheduled(), 0u);
  EXPECT_EQ(counters("work").pending, 10000u);
}

// -- priorities
// -----------------------------------------------------------------

TEST_F(GroupTime, HigherPriorityFirstAndPublishOrderWithinALevel) {
  create_work();
  enqueue({make("a0", priority(0)), make("b5", priority(5)),
           make("c9", priority(9)), make("d5", priority(5)),
           make("e0", priority(0))});
  join(a, 1, "work", "jobs.>");
  EXPECT_EQ(a.sink->payloads(), (strings{"c9", "b5", "d5", "a0", "e0"}));
}

TEST_F(GroupTime, RequeuedMessagesKeepTheirPriority) {
  create_work([](tb::group_settings& s) { s.max_deliveries = 0; });
  join(a, 1, "work", "jobs.>", 1);
  enqueue({make("low", priority(0))});
  enqueue({make("high", priority(9))});
  // "low" went out before "high" arrived (one credit).
  EXPECT_EQ(a.sink->payloads(), strings{"low"});
  enqueue({make("mid", priority(4))});
  nack(a, {a.sink->deliveries().at(0).delivery_id()});
  ack(a, {a.sink->deliveries().at(1).delivery_id()});
  ack(a, {a.sink->deliveries().at(2).delivery_id()});
  EXPECT_EQ(a.sink->payloads(), (strings{"low", "high", "mid", "low"}));
  auto d = a.sink->deliveries();
  EXPECT_EQ(d[1].priority(), 9u);
  EXPECT_EQ(d[3].attempt(), 2u);
}

TEST_F(GroupTime, MaxPriorityCapsTheLevels) {
  create_work([](tb::group_settings& s) { s.max_priority = 3; });
  enqueue({make("p2", priority(2)), make("p5", priority(5)),
           make("p9", priority(9)), make("p3", priority(3))});
  join(a, 1, "work", "jobs.>");
  // 5, 9 and 3 share level 3, in publish order, before level 2.
  EXPECT_EQ(a.sink->payloads(), (strings{"p5", "p9", "p3", "p2"}));
}

TEST_F(GroupTime, ADelayedMessageJoinsItsLevelWhenDue) {
  create_work();
  join(a, 1, "work", "jobs.>", 1);
  enqueue({make("busy"), make("w0"), make("late9", message_timing{0, 100, 9}),
           make("w1")});
  step(100ms);
  // Due now, at level 9: ahead of w0 and w1, which waited longer.
  ack(a, {a.sink->deliveries().at(0).delivery_id()});
  EXPECT_EQ(a.sink->payloads(), (strings{"busy", "late9"}));
}

} // namespace
} // namespace tb::test
