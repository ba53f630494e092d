// Tests of a consumer group's delivery rules (spec 6), driven through the
// real router and sessions in simulated time: holding, FIFO, one member per
// message, round robin with credit, and every answer a member can give:
// ack, nack (now or later), reject, in progress, or none (ack_wait).

#include <set>
#include <string>
#include <vector>

#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using strings = std::vector<std::string>;
using ids = std::vector<uint64_t>;

/// A group "work" on "jobs.>", a publisher and two would-be members.
class GroupActor : public group_test {
protected:
  /// Creates the group "work" with `settings`.
  void create_work(tb::group_settings settings = group_settings("jobs.>")) {
    create_group("work", std::move(settings));
  }

  /// Returns the attempts of `session`'s deliveries, in order.
  static std::vector<uint32_t> attempts(const test_session& session) {
    std::vector<uint32_t> result;
    for (auto& delivery : session.sink->deliveries())
      result.push_back(delivery.attempt());
    return result;
  }

  /// Returns the delivery id of `session`'s `n`th delivery.
  static uint64_t delivery_id(const test_session& session, size_t n) {
    auto got = session.sink->deliveries();
    EXPECT_LT(n, got.size()) << "too few deliveries";
    return n < got.size() ? got[n].delivery_id() : 0;
  }

  test_session pub = spawn_session();
  test_session a = spawn_session();
  test_session b = spawn_session();
};

// -- holding and dispatch -----------------------------------------------------

TEST_F(GroupActor, HoldsMessagesPublishedBeforeAnyMemberAndDeliversOnJoin) {
  create_work();
  publish(pub, "jobs.a", 3);
  auto held = counters("work");
  EXPECT_EQ(held.received, 3u);
  EXPECT_EQ(held.pending, 3u);
  EXPECT_EQ(held.members, 0u);
  EXPECT_EQ(held.held_bytes, 6u);
  EXPECT_EQ(stats(pub).unrouted, 0u);
  join(a, 1, "work", "jobs.>");
  auto got = a.sink->deliveries();
  EXPECT_EQ(payloads_of(got), (strings{"m0", "m1", "m2"}));
  for (auto& delivery : got) {
    EXPECT_EQ(delivery.subscription_id(), 1u);
    EXPECT_EQ(delivery.topic(), "jobs.a");
    EXPECT_EQ(delivery.attempt(), 1u);
    EXPECT_NE(delivery.delivery_id(), 0u);
  }
  auto delivery_ids = ids_of(got);
  EXPECT_EQ(std::set<uint64_t>(delivery_ids.begin(), delivery_ids.end()).size(),
            3u);
  auto after = counters("work");
  EXPECT_EQ(after.pending, 0u);
  EXPECT_EQ(after.in_flight, 3u);
  EXPECT_EQ(after.delivered, 3u);
  EXPECT_EQ(after.members, 1u);
}

TEST_F(GroupActor, FirstDeliveriesFollowPublishOrderAcrossFramesAndTopics) {
  create_work();
  join(a, 1, "work", "jobs.>", 100);
  publish(pub, "jobs.a", 2, "a");
  publish(pub, "jobs.b", 2, "b");
  publish(pub, "jobs.a.x", 1, "c");
  auto got = a.sink->deliveries();
  EXPECT_EQ(payloads_of(got), (strings{"a0", "a1", "b0", "b1", "c0"}));
  for (size_t k = 1; k < got.size(); ++k)
    EXPECT_GT(got[k].message_id(), got[k - 1].message_id());
}

TEST_F(GroupActor, EachMessageGoesToExactlyOneMemberRoundRobin) {
  auto c = spawn_session();
  create_work();
  join(a, 1, "work", "jobs.>");
  join(b, 2, "work", "jobs.>");
  join(c, 3, "work", "jobs.>");
  publish(pub, "jobs.a", 6);
  EXPECT_EQ(a.sink->payloads(), (strings{"m0", "m3"}));
  EXPECT_EQ(b.sink->payloads(), (strings{"m1", "m4"}));
  EXPECT_EQ(c.sink->payloads(), (strings{"m2", "m5"}));
  EXPECT_EQ(counters("work").delivered, 6u);
}

TEST_F(GroupActor, RoundRobinSkipsMembersWithoutFreeCredit) {
  create_work();
  join(a, 1, "work", "jobs.>", 1);
  join(b, 2, "work", "jobs.>", 3);
  publish(pub, "jobs.a", 5);
  EXPECT_EQ(a.sink->payloads(), (strings{"m0"}));
  EXPECT_EQ(b.sink->payloads(), (strings{"m1", "m2", "m3"}));
  EXPECT_EQ(counters("work").pending, 1u);
  ack(a, {delivery_id(a, 0)});
  EXPECT_EQ(a.sink->payloads(), (strings{"m0", "m4"}));
  EXPECT_EQ(b.sink->payloads().size(), 3u);
}

TEST_F(GroupActor, MemberNeverHoldsMoreThanItsCreditAndAckingFreesCredit) {
  create_work();
  join(a, 1, "work", "jobs.>", 2);
  publish(pub, "jobs.a", 5);
  for (size_t acked = 0; acked < 5; ++acked) {
    auto received = a.sink->deliveries().size();
    EXPECT_EQ(received - acked, std::min<size_t>(2, 5 - acked));
    EXPECT_EQ(counters("work").in_flight, received - acked);
    ack(a, {delivery_id(a, acked)});
  }
  EXPECT_EQ(a.sink->payloads(), (strings{"m0", "m1", "m2", "m3", "m4"}));
}

// -- answers ------------------------------------------------------------------

TEST_F(GroupActor, AckForgetsTheMessage) {
  create_work();
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 2);
  ack(a, ids_of(a.sink->deliveries()));
  pass(3 * ack_wait);
  EXPECT_EQ(a.sink->deliveries().size(), 2u); // never redelivered
  auto after = counters("work");
  EXPECT_EQ(after.acked, 2u);
  EXPECT_EQ(after.pending, 0u);
  EXPECT_EQ(after.in_flight, 0u);
  EXPECT_EQ(after.held_bytes, 0u);
  EXPECT_EQ(after.redelivered, 0u);
}

TEST_F(GroupActor, NackWithRequeueRedeliversAsAttemptTwoWithANewDeliveryId) {
  create_work();
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 1);
  nack(a, {delivery_id(a, 0)});
  auto got = a.sink->deliveries();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].message_id(), got[0].message_id());
  EXPECT_EQ(got[1].payload(), "m0");
  EXPECT_EQ(attempts(a), (std::vector<uint32_t>{1, 2}));
  EXPECT_NE(got[1].delivery_id(), got[0].delivery_id());
  auto after = counters("work");
  EXPECT_EQ(after.redelivered, 1u);
  EXPECT_EQ(after.delivered, 2u);
  EXPECT_EQ(after.in_flight, 1u);
}

TEST_F(GroupActor, NackWithDelayRedeliversOnlyOnceTheDelayPassed) {
  create_work();
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 1);
  nack(a, {delivery_id(a, 0)}, 500);
  EXPECT_EQ(counters("work").pending, 1u); // parked
  pass(400ms);
  EXPECT_EQ(a.sink->deliveries().size(), 1u);
  pass(200ms);
  EXPECT_EQ(attempts(a), (std::vector<uint32_t>{1, 2}));
}

TEST_F(GroupActor, RejectSendsTheMessageToTheDeadLetterTopicWithHeaders) {
  auto dlq = spawn_session();
  subscribe(dlq, 9, "$dlq.work");
  create_work();
  join(a, 1, "work", "jobs.>");
  auto original = make_message("jobs.a", "payload");
  (*original.mutable_headers())["trace"] = "t-1";
  send_frame(pub, publish_frame(next_request_id(), {original}));
  run();
  reject(a, {delivery_id(a, 0)});
  auto dead = dlq.sink->deliveries();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].topic(), "$dlq.work");
  EXPECT_EQ(dead[0].payload(), "payload");
  auto& headers = dead[0].headers();
  EXPECT_EQ(headers.at("trace"), "t-1");
  EXPECT_EQ(headers.at("x-tinybroker-original-topic"), "jobs.a");
  EXPECT_EQ(headers.at("x-tinybroker-original-id"),
            std::to_string(a.sink->deliveries()[0].message_id()));
  EXPECT_EQ(headers.at("x-tinybroker-group"), "work");
  EXPECT_EQ(headers.at("x-tinybroker-attempts"), "1");
  EXPECT_EQ(headers.at("x-tinybroker-reason"), "rejected");
  EXPECT_EQ(a.sink->deliveries().size(), 1u); // not redelivered
  auto after = counters("work");
  EXPECT_EQ(after.dead_lettered, 1u);
  EXPECT_EQ(after.in_flight + after.pending, 0u);
}

TEST_F(GroupActor, MaxDeliveriesReachedSendsToDeadLetterWithAttempts) {
  auto dlq = spawn_session();
  subscribe(dlq, 9, "$dlq.work");
  auto settings = group_settings("jobs.>");
  settings.max_deliveries = 2;
  create_work(settings);
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 1);
  nack(a, {delivery_id(a, 0)});
  nack(a, {delivery_id(a, 1)});
  EXPECT_EQ(attempts(a), (std::vector<uint32_t>{1, 2}));
  auto dead = dlq.sink->deliveries();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].headers().at("x-tinybroker-reason"), "max_deliveries");
  EXPECT_EQ(dead[0].headers().at("x-tinybroker-attempts"), "2");
  EXPECT_EQ(counters("work").dead_lettered, 1u);
}

TEST_F(GroupActor, DeadLetterNoneDropsTheMessageAndCountsIt) {
  auto dlq = spawn_session();
  subscribe(dlq, 9, "$dlq.work");
  auto settings = group_settings("jobs.>");
  settings.dead_letter = "none";
  create_work(settings);
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 1);
  reject(a, {delivery_id(a, 0)});
  EXPECT_TRUE(dlq.sink->deliveries().empty());
  auto after = counters("work");
  EXPECT_EQ(after.dropped, 1u);
  EXPECT_EQ(after.dead_lettered, 0u);
  EXPECT_EQ(after.in_flight, 0u);
}

// -- ack_wait -----------------------------------------------------------------

TEST_F(GroupActor, UnansweredDeliveryGoesToAnotherMemberAfterAckWait) {
  create_work();
  join(a, 1, "work", "jobs.>");
  join(b, 2, "work", "jobs.>");
  publish(pub, "jobs.a", 1);
  auto first = delivery_id(a, 0);
  pass(900ms);
  EXPECT_TRUE(b.sink->deliveries().empty());
  pass(200ms);
  ASSERT_EQ(b.sink->deliveries().size(), 1u);
  EXPECT_EQ(attempts(b), (std::vector<uint32_t>{2}));
  EXPECT_NE(delivery_id(b, 0), first);
  // The old member was told: its late ack is stale and acks nothing.
  EXPECT_EQ(deref<tb::session_state>(a.hdl).delivery_owners.count(first), 0u);
  ack(a, {first});
  EXPECT_EQ(stats(a).stale_answers, 1u);
  EXPECT_EQ(counters("work").acked, 0u);
  EXPECT_EQ(counters("work").in_flight, 1u);
  ack(b, {delivery_id(b, 0)});
  EXPECT_EQ(counters("work").acked, 1u);
  EXPECT_EQ(counters("work").redelivered, 1u);
}

TEST_F(GroupActor, DeliveriesExpiringTogetherAreRedeliveredOldestFirst) {
  create_work();
  join(a, 1, "work", "jobs.>", 3);
  publish(pub, "jobs.a", 3);
  publish(pub, "jobs.a", 1, "n"); // held behind the redeliveries
  pass(1100ms);
  EXPECT_EQ(a.sink->payloads(), (strings{"m0", "m1", "m2", "m0", "m1", "m2"}));
  EXPECT_EQ(attempts(a), (std::vector<uint32_t>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(counters("work").pending, 1u);
  ack(a, {delivery_id(a, 3)});
  EXPECT_EQ(a.sink->payloads().back(), "n0");
}

TEST_F(GroupActor, AckCrossingTheExpiryIsStaleInTheGroupAndAcksNothing) {
  create_work();
  join(a, 1, "work", "jobs.>");
  join(b, 2, "work", "jobs.>");
  publish(pub, "jobs.a", 1);
  auto first = delivery_id(a, 0);
  pass(990ms);
  // The ack is on its way while the deadline passes: the session forwards
  // it before it learns of the expiry.
  send_frame(a, ack_frame(next_request_id(), {first}));
  sched.advance_time(10ms);
  run_except(a.hdl);
  ASSERT_EQ(b.sink->deliveries().size(), 1u);
  run();
  auto after = counters("work");
  EXPECT_EQ(after.stale_answers, 1u);
  EXPECT_EQ(after.acked, 0u);
  EXPECT_EQ(after.in_flight, 1u);
  ack(b, {delivery_id(b, 0)});
  EXPECT_EQ(counters("work").acked, 1u);
}

TEST_F(GroupActor, InProgressPushesTheDeadlineBackByAckWait) {
  create_work();
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 1);
  pass(600ms);
  in_progress(a, {delivery_id(a, 0)});
  pass(500ms); // past the first deadline
  EXPECT_EQ(a.sink->deliveries().size(), 1u);
  EXPECT_EQ(counters("work").redelivered, 0u);
  pass(600ms); // past the extended one
  EXPECT_EQ(attempts(a), (std::vector<uint32_t>{1, 2}));
}

TEST_F(GroupActor, InProgressNamingADeliveryTwiceStillRedeliversItOnce) {
  create_work();
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 1);
  pass(500ms);
  auto id = delivery_id(a, 0);
  in_progress(a, {id, id});
  pass(1100ms);
  auto hdl = group("work");
  ASSERT_FALSE(terminated(hdl));
  EXPECT_EQ(attempts(a), (std::vector<uint32_t>{1, 2}));
  auto after = counters("work");
  EXPECT_EQ(after.in_flight, 1u);
  EXPECT_EQ(after.redelivered, 1u);
}

} // namespace
} // namespace tb::test
