// Tests of a consumer group with a member that does not answer (spec 6,
// docs/semantics.md "Members that stop answering"): a redelivery after
// ack_wait goes to another member, a member whose deliveries expire again and
// again is marked stalled until it answers, and a message is dead-lettered
// for max_deliveries only once it went to two members (or no other could
// take it). In simulated time, through the real router and sessions.

#include <string>
#include <vector>

#include "tests/actors/group_fixture.hpp"
#include "tests/log/log_capture.hpp"

namespace tb::test {
namespace {

using strings = std::vector<std::string>;
using ids = std::vector<uint64_t>;

/// A group "work" on "jobs.>", a publisher, two members and a dead letter
/// subscriber.
class GroupStall : public group_test {
protected:
  /// Creates the group "work" with `max_deliveries` and `policy`.
  void create_work(uint32_t max_deliveries = 5,
                   std::string policy = "round_robin") {
    auto settings = group_settings("jobs.>");
    settings.max_deliveries = max_deliveries;
    settings.policy = std::move(policy);
    create_group("work", settings);
    subscribe(dlq, 9, "$dlq.work");
  }

  /// Returns "<payload>#<attempt>" of every delivery `s` received, in order.
  static strings tagged(const test_session& s) {
    strings result;
    for (auto& d : s.sink->deliveries())
      result.push_back(d.payload() + "#" + std::to_string(d.attempt()));
    return result;
  }

  /// Returns the delivery id of `session`'s `n`th delivery.
  static uint64_t delivery_id(const test_session& session, size_t n) {
    auto got = session.sink->deliveries();
    EXPECT_LT(n, got.size()) << "too few deliveries";
    return n < got.size() ? got[n].delivery_id() : 0;
  }

  /// Returns the members of "work" as Stats shows them, in join order.
  std::vector<tb::member_stats> members() {
    return query<tb::group_info>(group("work"), tb::stats_atom_v).members;
  }

  test_session pub = spawn_session();
  test_session a = spawn_session();
  test_session b = spawn_session();
  test_session dlq = spawn_session();
};

// -- where a redelivery goes --------------------------------------------------

TEST_F(GroupStall, RedeliveryAfterTimeoutGoesToTheOtherMember) {
  create_work();
  join(a, 1, "work", "jobs.>");
  join(b, 2, "work", "jobs.>");
  publish(pub, "jobs.a", 2); // m0 to a, m1 to b; a is next in the rotation
  ack(b, {delivery_id(b, 0)});
  pass(ack_wait + 10ms);
  EXPECT_EQ(tagged(a), (strings{"m0#1"}));
  EXPECT_EQ(tagged(b), (strings{"m1#1", "m0#2"}));
}

TEST_F(GroupStall, RedeliveryGoesBackToTheSameMemberWhenNoOtherHasCredit) {
  create_work();
  join(a, 1, "work", "jobs.>", 1);
  join(b, 2, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 2); // b holds m1 and has no credit
  pass(ack_wait / 2);
  in_progress(b, {delivery_id(b, 0)});
  pass(ack_wait / 2 + 10ms);
  EXPECT_EQ(tagged(a), (strings{"m0#1", "m0#2"}));
  EXPECT_EQ(tagged(b), (strings{"m1#1"}));
}

TEST_F(GroupStall, RedeliveryPrefersAMemberTheMessageHasNotBeenTo) {
  create_work(0);
  join(a, 1, "work", "jobs.>", 1);
  join(b, 2, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 1); // m0 to a
  nack(a, {delivery_id(a, 0)});
  EXPECT_EQ(tagged(b), (strings{"m0#2"}));
  nack(b, {delivery_id(b, 0)});
  // Both had it: the rotation decides again (a is next).
  EXPECT_EQ(tagged(a), (strings{"m0#1", "m0#3"}));
}

// -- stalled members ----------------------------------------------------------

TEST_F(GroupStall, MemberWhoseDeliveriesExpireThreeTimesInARowIsStalled) {
  create_work(0);
  join(a, 1, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 1);
  pass(2 * ack_wait + 10ms); // two expiries: a got it again each time
  EXPECT_EQ(tagged(a), (strings{"m0#1", "m0#2", "m0#3"}));
  EXPECT_FALSE(members().at(0).stalled);
  pass(ack_wait);
  auto m = members().at(0);
  EXPECT_TRUE(m.stalled);
  EXPECT_EQ(m.expired, 3u);
  EXPECT_EQ(m.in_flight, 0u);
  auto c = counters("work");
  EXPECT_EQ(c.stalled_members, 1u);
  EXPECT_EQ(c.expired, 3u);
  EXPECT_EQ(c.members, 1u); // still a member
  EXPECT_EQ(c.pending, 1u); // held for it, not handed out
  pass(5 * ack_wait);
  EXPECT_EQ(a.sink->deliveries().size(), 3u);
}

TEST_F(GroupStall, AnyAnswerUnstallsTheMember) {
  create_work(0);
  join(a, 1, "work", "jobs.>", 3);
  publish(pub, "jobs.a", 3);
  pass(ack_wait + 10ms); // three expire together: one time
  EXPECT_FALSE(members().at(0).stalled);
  pass(2 * ack_wait); // the third time
  ASSERT_TRUE(members().at(0).stalled);
  EXPECT_EQ(members().at(0).expired, 9u);
  EXPECT_EQ(a.sink->deliveries().size(), 9u);
  // A late ack (the delivery expired, so it is stale) still shows a reads.
  ack(a, {delivery_id(a, 0)});
  EXPECT_FALSE(members().at(0).stalled);
  EXPECT_EQ(counters("work").stalled_members, 0u);
  auto got = tagged(a);
  EXPECT_EQ(strings(got.begin() + 9, got.end()),
            (strings{"m0#4", "m1#4", "m2#4"}));
}

TEST_F(GroupStall, AnAnswerInBetweenStartsTheCountAgain) {
  create_work(0);
  join(a, 1, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 2);
  pass(2 * ack_wait + 10ms); // m0 expired twice
  ack(a, {delivery_id(a, 2)});
  pass(2 * ack_wait); // m1 expired twice
  EXPECT_FALSE(members().at(0).stalled);
  EXPECT_EQ(members().at(0).expired, 4u);
  pass(ack_wait);
  EXPECT_TRUE(members().at(0).stalled);
}

TEST_F(GroupStall, StalledMemberGetsNoNewMessagesTheOtherGetsThemAll) {
  create_work(0);
  join(a, 1, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 1);
  pass(3 * ack_wait + 10ms);
  ASSERT_TRUE(members().at(0).stalled);
  join(b, 2, "work", "jobs.>", 4);
  publish(pub, "jobs.a", 4, "n");
  ack(b, ids_of(b.sink->deliveries()));
  publish(pub, "jobs.a", 2, "o");
  ack(b, ids_of(b.sink->deliveries()));
  EXPECT_EQ(a.sink->deliveries().size(), 3u);
  EXPECT_EQ(tagged(b),
            (strings{"m0#4", "n0#1", "n1#1", "n2#1", "n3#1", "o0#1", "o1#1"}));
  EXPECT_EQ(counters("work").acked, 7u);
}

TEST_F(GroupStall, MemberThatLeavesIsNoLongerStalled) {
  create_work(0);
  join(a, 1, "work", "jobs.>", 3);
  publish(pub, "jobs.a", 3);
  pass(3 * ack_wait + 10ms);
  ASSERT_TRUE(members().at(0).stalled);
  send_frame(a, unsubscribe_frame(next_request_id(), 1));
  run();
  EXPECT_EQ(counters("work").stalled_members, 0u);
  join(a, 3, "work", "jobs.>", 3);
  EXPECT_EQ(a.sink->deliveries().size(), 12u);
}

TEST_F(GroupStall, StallingAndAnsweringAgainAreLoggedAtMostFiveEachIn10s) {
  log_capture logs;
  auto settings = group_settings("jobs.>");
  settings.ack_wait = 100ms;
  settings.max_deliveries = 0;
  create_group("work", settings);
  join(a, 1, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 1);
  for (int i = 0; i < 30; ++i) { // stalls and answers 30 times in 12 s
    pass(310ms);
    ASSERT_TRUE(members().at(0).stalled) << i;
    nack(a, {a.sink->deliveries().back().delivery_id()});
    pass(90ms);
  }
  auto stalled = logs.matching("group member stalled");
  ASSERT_FALSE(stalled.empty());
  EXPECT_NE(stalled[0].find("WARN"), std::string::npos) << stalled[0];
  EXPECT_NE(stalled[0].find("group=work"), std::string::npos) << stalled[0];
  EXPECT_NE(stalled[0].find("timeouts_in_row=3"), std::string::npos)
      << stalled[0];
  // At most 5 of each kind per window of 10 s: 2 windows, not 30 lines.
  EXPECT_GE(stalled.size(), 6u);
  EXPECT_LE(stalled.size(), 10u);
  auto answered = logs.matching("no longer stalled");
  EXPECT_GE(answered.size(), 6u);
  EXPECT_LE(answered.size(), 10u);
  auto summary = logs.matching("stall changes suppressed");
  ASSERT_FALSE(summary.empty());
  EXPECT_NE(summary[0].find("suppressed=2"), std::string::npos) << summary[0];
}

// -- dead letters -------------------------------------------------------------

TEST_F(GroupStall, MaxDeliveriesAtOneMemberGivesAnotherMemberOneMoreTry) {
  create_work(2);
  join(a, 1, "work", "jobs.>", 1);
  join(b, 2, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 2); // m0 to a, m1 to b
  nack(a, {delivery_id(a, 0)});
  EXPECT_EQ(tagged(a), (strings{"m0#1", "m0#2"})); // b had no credit
  nack(a, {delivery_id(a, 1)});
  // Two attempts, both at a: held for b, not dead-lettered.
  EXPECT_TRUE(dlq.sink->deliveries().empty());
  EXPECT_EQ(counters("work").pending, 1u);
  ack(b, {delivery_id(b, 0)});
  EXPECT_EQ(tagged(b), (strings{"m1#1", "m0#3"}));
  nack(b, {delivery_id(b, 1)});
  // Now it went to two members: dead-lettered.
  auto dead = dlq.sink->deliveries();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].headers().at("x-tinybroker-reason"), "max_deliveries");
  EXPECT_EQ(dead[0].headers().at("x-tinybroker-attempts"), "3");
  EXPECT_EQ(tagged(a), (strings{"m0#1", "m0#2"}));
}

TEST_F(GroupStall, MaxDeliveriesWithOneMemberDeadLettersAsBefore) {
  create_work(2);
  join(a, 1, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 1);
  pass(2 * ack_wait + 10ms);
  ASSERT_EQ(dlq.sink->deliveries().size(), 1u);
  EXPECT_EQ(counters("work").dead_lettered, 1u);
}

TEST_F(GroupStall, MaxDeliveriesWhenTheOtherMemberIsStalledDeadLetters) {
  create_work(2);
  join(b, 2, "work", "jobs.>", 1);
  publish(pub, "jobs.b", 3, "b");
  // b0 times out twice at b, the only member, and is dead-lettered; b1
  // times out once more: b is stalled.
  pass(3 * ack_wait + 10ms);
  ASSERT_TRUE(members().at(0).stalled);
  EXPECT_EQ(counters("work").dead_lettered, 1u);
  join(a, 1, "work", "jobs.>", 3);
  ack(a, ids_of(a.sink->deliveries()));
  publish(pub, "jobs.a", 1); // to a: b takes nothing
  nack(a, {delivery_id(a, 2)});
  nack(a, {delivery_id(a, 3)});
  EXPECT_EQ(tagged(a), (strings{"b1#2", "b2#1", "m0#1", "m0#2"}));
  EXPECT_EQ(counters("work").dead_lettered, 2u); // no one else may take it
  EXPECT_TRUE(members().at(0).stalled);
}

TEST_F(GroupStall, KeyHashKeepsAKeyAtItsOwnerAndDeadLettersAtTheLimit) {
  create_work(2, "key_hash");
  join(a, 1, "work", "jobs.>", 8);
  join(b, 2, "work", "jobs.>", 8);
  std::vector<pb::Message> batch{make_message("jobs.k", "k1", "key-1")};
  send_frame(pub, publish_frame(next_request_id(), std::move(batch)));
  run();
  auto& owner = a.sink->deliveries().empty() ? b : a;
  auto& other = a.sink->deliveries().empty() ? a : b;
  nack(owner, {delivery_id(owner, 0)});
  EXPECT_EQ(owner.sink->deliveries().size(), 2u); // the key stays put
  nack(owner, {delivery_id(owner, 1)});
  EXPECT_TRUE(other.sink->deliveries().empty());
  EXPECT_EQ(counters("work").dead_lettered, 1u);
}

// -- a stopped member, start to end -------------------------------------------

TEST_F(GroupStall, StoppedMemberLosesNothingAllMessagesReachTheAckingOne) {
  create_work(2);
  join(a, 1, "work", "jobs.>", 16); // joins, then never answers
  join(b, 2, "work", "jobs.>", 16);
  // Ten waves 1.2 s apart: a takes its share of each until its deliveries
  // timed out three times.
  for (int step = 0; step < 600; ++step) {
    if (step % 48 == 0 && step < 480)
      publish(pub, "jobs.a", 20, "m" + std::to_string(step / 48) + "-");
    ack(b, ids_of(b.sink->deliveries()));
    advance(25ms);
  }
  auto c = counters("work");
  EXPECT_EQ(c.acked, 200u);
  EXPECT_EQ(c.dead_lettered, 0u);
  EXPECT_EQ(c.pending + c.in_flight, 0u);
  EXPECT_TRUE(dlq.sink->deliveries().empty());
  EXPECT_TRUE(members().at(0).stalled);
  EXPECT_LE(a.sink->deliveries().size(), 3 * 16u); // three times, then none
}

} // namespace
} // namespace tb::test
