// Tests of consumer groups around their members and their admin (spec 6):
// members that die or leave, stale answers, the bounds of what a group
// holds, pattern conflicts, auto-create, delete, list, and groups created
// while publishers cache the routes of their topics.

#include <string>
#include <vector>

#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;
using strings = std::vector<std::string>;
using ids = std::vector<uint64_t>;

/// A group "work" on "jobs.>", a publisher and two members.
class GroupFlow : public group_test {
protected:
  /// Creates the group `name` on "jobs.>", changed by `change`.
  template <class F>
  void create_with(const std::string& name, F change) {
    auto settings = group_settings("jobs.>");
    change(settings);
    create_group(name, settings);
  }

  /// Returns the results of the last confirm `session` received.
  static std::vector<pb::PublishResult> last_confirm(const test_session& s) {
    auto confirms = s.sink->of_kind(kind::kPublishConfirm);
    EXPECT_FALSE(confirms.empty()) << "no confirm";
    if (confirms.empty())
      return {};
    auto& results = confirms.back().publish_confirm().results();
    return {results.begin(), results.end()};
  }

  /// Returns "<payload>#<attempt>" of every delivery `s` received, in order.
  static strings tagged(const test_session& s) {
    strings result;
    for (auto& d : s.sink->deliveries())
      result.push_back(d.payload() + "#" + std::to_string(d.attempt()));
    return result;
  }

  /// Sends `ids` to the group actor "work" as `atom` answers of `session`.
  template <class Atom, class... Ts>
  void tell_group(Atom atom, const test_session& session, ids delivery_ids,
                  Ts... xs) {
    self->send(group("work"), atom, session.hdl, std::move(delivery_ids),
               xs...);
    run();
  }

  test_session pub = spawn_session();
  test_session a = spawn_session();
  test_session b = spawn_session();
};

// -- members that die or leave ------------------------------------------------

TEST_F(GroupFlow, DeadMembersDeliveriesAreRedeliveredAtOnceInOrder) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>", 3);
  publish(pub, "jobs.a", 3);
  join(b, 2, "work", "jobs.>");
  EXPECT_TRUE(b.sink->deliveries().empty());
  self->send_exit(a.hdl, caf::exit_reason::kill);
  run(); // no time passes
  EXPECT_EQ(tagged(b), (strings{"m0#2", "m1#2", "m2#2"}));
  auto after = counters("work");
  EXPECT_EQ(after.members, 1u);
  EXPECT_EQ(after.in_flight, 3u);
  EXPECT_EQ(after.redelivered, 3u);
}

TEST_F(GroupFlow, DeadMembersDeliveriesGoToTheHeadOfTheQueue) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>", 3);
  publish(pub, "jobs.a", 3);
  join(b, 2, "work", "jobs.>", 2);
  publish(pub, "jobs.a", 4, "n"); // b: n0 n1; held: n2 n3
  self->send_exit(a.hdl, caf::exit_reason::kill);
  run();
  while (b.sink->deliveries().size() < 7) {
    auto before = b.sink->deliveries().size();
    ack(b, ids_of(b.sink->deliveries()));
    ASSERT_GT(b.sink->deliveries().size(), before) << "nothing redelivered";
  }
  EXPECT_EQ(tagged(b),
            (strings{"n0#1", "n1#1", "m0#2", "m1#2", "m2#2", "n2#1", "n3#1"}));
}

TEST_F(GroupFlow, DeadSessionWithTwoMembershipsRequeuesAllInDeliveryOrder) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>", 1);
  join(a, 2, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 4); // a: m0 (1), m1 (2); held: m2 m3
  join(b, 3, "work", "jobs.>", 1);
  self->send_exit(a.hdl, caf::exit_reason::kill);
  run();
  for (int k = 0; k < 3; ++k) // one at a time: credit 1
    ack(b, {ids_of(b.sink->deliveries()).back()});
  EXPECT_EQ(tagged(b), (strings{"m2#1", "m0#2", "m1#2", "m3#1"}));
}

TEST_F(GroupFlow, LeftMemberGetsNothingNewButMayAnswerWhatItHolds) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 2);
  send_frame(a, unsubscribe_frame(next_request_id(), 1));
  run();
  auto gone = a.sink->of_kind(kind::kUnsubscribed);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].unsubscribed().reason(), "");
  publish(pub, "jobs.a", 2, "n");
  EXPECT_EQ(a.sink->payloads(), (strings{"m0", "m1"}));
  EXPECT_EQ(counters("work").members, 0u);
  ack(a, {ids_of(a.sink->deliveries())[0]});
  EXPECT_EQ(counters("work").acked, 1u);
  join(b, 2, "work", "jobs.>");
  EXPECT_EQ(tagged(b), (strings{"n0#1", "n1#1"}));
  ack(b, ids_of(b.sink->deliveries()));
  pass(1100ms); // what it did not answer is redelivered after ack_wait
  EXPECT_EQ(tagged(b), (strings{"n0#1", "n1#1", "m1#2"}));
  EXPECT_EQ(a.sink->deliveries().size(), 2u);
}

TEST_F(GroupFlow, RejoiningWithTheSameIdWhileHoldingGetsDeliveriesAgain) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 1);
  send_frame(a, unsubscribe_frame(next_request_id(), 1));
  join(a, 1, "work", "jobs.>"); // m0 still unanswered
  EXPECT_EQ(a.sink->of_kind(kind::kSubscribed).size(), 2u);
  EXPECT_EQ(counters("work").members, 1u);
  publish(pub, "jobs.a", 1, "n");
  EXPECT_EQ(a.sink->payloads(), (strings{"m0", "n0"}));
  ack(a, ids_of(a.sink->deliveries()));
  EXPECT_EQ(counters("work").acked, 2u);
}

// -- stale answers ------------------------------------------------------------

TEST_F(GroupFlow, StaleAcksFromAClientAreCountedAndAckNothing) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>");
  join(b, 2, "work", "jobs.>");
  publish(pub, "jobs.a", 2);
  auto mine = ids_of(a.sink->deliveries()).at(0);
  auto theirs = ids_of(b.sink->deliveries()).at(0);
  ack(a, {mine});
  ack(a, {mine});        // already acked
  ack(a, {mine + 1000}); // unknown
  ack(a, {theirs});      // another session's
  nack(a, {theirs});
  EXPECT_EQ(stats(a).stale_answers, 4u);
  auto after = counters("work");
  EXPECT_EQ(after.acked, 1u);
  EXPECT_EQ(after.in_flight, 1u);
  EXPECT_EQ(after.redelivered, 0u);
  ack(b, {theirs});
  EXPECT_EQ(counters("work").acked, 2u);
}

TEST_F(GroupFlow, StaleAnswersReachingTheGroupAreCountedAndChangeNothing) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>");
  join(b, 2, "work", "jobs.>");
  publish(pub, "jobs.a", 2);
  auto mine = ids_of(a.sink->deliveries()).at(0);
  auto theirs = ids_of(b.sink->deliveries()).at(0);
  tell_group(tb::ack_atom_v, a, {theirs});
  tell_group(tb::ack_atom_v, a, {mine + 1000});
  tell_group(tb::ack_atom_v, a, {mine});
  tell_group(tb::ack_atom_v, a, {mine});
  tell_group(tb::nack_atom_v, a, {theirs}, uint32_t{0});
  tell_group(tb::reject_atom_v, a, {theirs});
  tell_group(tb::progress_atom_v, a, {theirs});
  auto after = counters("work");
  EXPECT_EQ(after.stale_answers, 6u);
  EXPECT_EQ(after.acked, 1u);
  EXPECT_EQ(after.in_flight, 1u);
  EXPECT_EQ(after.redelivered + after.dead_lettered, 0u);
  EXPECT_EQ(b.sink->deliveries().size(), 1u);
}

// -- bounds -------------------------------------------------------------------

TEST_F(GroupFlow, FullGroupRefusesWithResourceExhaustedWhileFanoutGetsIt) {
  auto fan = spawn_session();
  subscribe(fan, 7, "jobs.a");
  create_with("work", [](auto& s) { s.max_pending_messages = 2; });
  publish(pub, "jobs.a", 3);
  auto results = last_confirm(pub);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_FALSE(results[0].has_error());
  EXPECT_FALSE(results[1].has_error());
  EXPECT_NE(results[2].id(), 0u);
  EXPECT_EQ(results[2].error().code(), 8);
  EXPECT_EQ(results[2].error().reason(), "group_full");
  EXPECT_NE(results[2].error().message().find("\"work\""), std::string::npos);
  EXPECT_EQ(fan.sink->payloads(), (strings{"m0", "m1", "m2"}));
  EXPECT_EQ(counters("work").refused, 1u);
  join(a, 1, "work", "jobs.>", 1); // in flight still counts as held
  publish(pub, "jobs.a", 1, "n");
  EXPECT_EQ(last_confirm(pub)[0].error().code(), 8);
  ack(a, {ids_of(a.sink->deliveries())[0]});
  publish(pub, "jobs.a", 1, "o");
  EXPECT_FALSE(last_confirm(pub)[0].has_error());
  EXPECT_EQ(counters("work").received, 3u);
}

TEST_F(GroupFlow, FullGroupWithDropOldestDropsTheOldestNotInFlight) {
  create_with("work", [](auto& s) {
    s.max_pending_messages = 2;
    s.overflow = tb::overflow_policy::drop_oldest;
  });
  join(a, 1, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 1, "flying");
  publish(pub, "jobs.a", 2, "n"); // n0 makes two; n1 drops n0
  for (auto& result : last_confirm(pub))
    EXPECT_FALSE(result.has_error());
  auto after = counters("work");
  EXPECT_EQ(after.dropped, 1u);
  EXPECT_EQ(after.received, 3u);
  EXPECT_EQ(after.pending + after.in_flight, 2u);
  ack(a, ids_of(a.sink->deliveries()));
  EXPECT_EQ(a.sink->payloads(), (strings{"flying0", "n1"}));
}

TEST_F(GroupFlow, ByteBoundRefusesOrDropsLikeTheMessageBound) {
  create_with("work", [](auto& s) { s.max_pending_bytes = 10; });
  create_with("work2", [](auto& s) {
    s.max_pending_bytes = 10;
    s.overflow = tb::overflow_policy::drop_oldest;
  });
  publish(pub, "jobs.a", 3, "abc"); // 4 bytes each
  auto results = last_confirm(pub);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_FALSE(results[1].has_error());
  EXPECT_EQ(results[2].error().code(), 8);
  EXPECT_NE(results[2].error().message().find("\"work\""), std::string::npos);
  EXPECT_EQ(results[2].error().message().find("work2"), std::string::npos);
  auto refusing = counters("work");
  EXPECT_EQ(refusing.refused, 1u);
  EXPECT_EQ(refusing.held_bytes, 8u);
  auto dropping = counters("work2");
  EXPECT_EQ(dropping.dropped, 1u);
  EXPECT_EQ(dropping.held_bytes, 8u);
  join(a, 1, "work2", "jobs.>");
  EXPECT_EQ(a.sink->payloads(), (strings{"abc1", "abc2"}));
}

// -- admin --------------------------------------------------------------------

TEST_F(GroupFlow, JoiningWithAnotherPatternIsFailedPrecondition) {
  create_group("work", group_settings("jobs.>"));
  send_frame(a, join_frame(77, 1, "other.>", "work"));
  run();
  auto errors = a.sink->of_kind(kind::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].error().request_id(), 77u);
  EXPECT_EQ(errors[0].error().request(), "subscribe");
  EXPECT_EQ(errors[0].error().subscription_id(), 1u);
  EXPECT_EQ(errors[0].error().error().code(), 9);
  EXPECT_EQ(errors[0].error().error().reason(), "group_pattern_conflict");
  EXPECT_EQ(stats(a).subscriptions, 0u);
  join(a, 1, "work", "jobs.>"); // the id is free again
  EXPECT_EQ(counters("work").members, 1u);
}

TEST_F(GroupFlow, DeleteEndsMembershipsWithAReasonAndCountsWhatItDropped) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>", 2);
  publish(pub, "jobs.a", 5);
  auto hdl = group("work");
  auto dropped =
      query<uint64_t>(router, tb::delete_atom_v, std::string{"work"});
  EXPECT_EQ(dropped, 5u);
  EXPECT_TRUE(terminated(hdl));
  auto ended = a.sink->of_kind(kind::kUnsubscribed);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].unsubscribed().subscription_id(), 1u);
  EXPECT_NE(ended[0].unsubscribed().reason().find("deleted"),
            std::string::npos);
  EXPECT_EQ(stats(a).subscriptions, 0u);
  publish(pub, "jobs.a", 1);
  EXPECT_EQ(stats(pub).unrouted, 1u);
  EXPECT_TRUE(
      query<std::vector<tb::group_info>>(router, tb::list_atom_v).empty());
}

TEST_F(GroupFlow, ListGroupsIsSortedByNameWithCounters) {
  create_group("zeta", group_settings("jobs.>"));
  create_group("alpha", group_settings("jobs.a"));
  join(a, 1, "mid", "other.>"); // auto-created with the defaults
  publish(pub, "jobs.a", 2);
  publish(pub, "other.x", 1);
  auto groups = query<std::vector<tb::group_info>>(router, tb::list_atom_v);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].name, "alpha");
  EXPECT_EQ(groups[0].counters.pending, 2u);
  EXPECT_EQ(groups[1].name, "mid");
  EXPECT_EQ(groups[1].settings.pattern, "other.>");
  EXPECT_EQ(groups[1].settings.ack_wait, tb::group_settings{}.ack_wait);
  EXPECT_EQ(groups[1].counters.members, 1u);
  EXPECT_EQ(groups[1].counters.in_flight, 1u);
  EXPECT_EQ(groups[2].name, "zeta");
  EXPECT_EQ(groups[2].counters.received, 2u);
}

TEST_F(GroupFlow, GroupCreatedWhileTopicsAreCachedGetsEveryLaterMessage) {
  publish(pub, "jobs.a", 1);
  publish(pub, "jobs.b", 1);
  EXPECT_EQ(stats(pub).unrouted, 2u);
  auto response = self->request(router, caf::infinite, tb::create_atom_v,
                                std::string{"late"}, group_settings("jobs.>"));
  run_except(pub.hdl);
  EXPECT_TRUE(self->mailbox().empty()) << "confirmed before the publisher "
                                          "caches the new routes";
  run();
  ASSERT_FALSE(self->mailbox().empty());
  response.receive([](tb::group_info& info) { EXPECT_EQ(info.name, "late"); },
                   [](caf::error&) { ADD_FAILURE() << "create failed"; });
  send_frame(pub,
             publish_frame(next_request_id(), {make_message("jobs.a", "x"),
                                               make_message("jobs.b", "y")}));
  run();
  EXPECT_EQ(counters("late").received, 2u);
  EXPECT_EQ(stats(pub).unrouted, 2u);
}

/// A router that creates no group on join.
class GroupNoAutoCreate : public group_test {
protected:
  GroupNoAutoCreate()
      : group_test(
            [](tb::router_settings& s) { s.auto_create_groups = false; }) {}

  test_session a = spawn_session();
};

TEST_F(GroupNoAutoCreate, JoiningAnUnknownGroupIsNotFound) {
  send_frame(a, join_frame(78, 1, "jobs.>", "work"));
  run();
  auto errors = a.sink->of_kind(kind::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].error().request_id(), 78u);
  EXPECT_EQ(errors[0].error().error().code(), 5);
  EXPECT_EQ(errors[0].error().error().reason(), "unknown_group");
  EXPECT_FALSE(group("work"));
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>");
  EXPECT_EQ(counters("work").members, 1u);
}

} // namespace
} // namespace tb::test
