// Tests of purging a group (issue 27, the console's and PurgeGroup's
// action): the messages waiting for a delivery go, those in flight stay and
// may still be answered, and the router forwards the request by name.

#include <string>
#include <vector>

#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using ids = std::vector<uint64_t>;

/// A group "work" on "jobs.>", a publisher and one member.
class GroupPurge : public group_test {
protected:
  /// Asks the router to purge `name` and returns the error it answers
  /// (default if it answered a count).
  tb::error_info purge_error(const std::string& name) {
    run();
    sched.inline_next_enqueue();
    auto response =
        self->request(router, caf::infinite, tb::purge_atom_v, name);
    sched.after_next_enqueue(std::function<void()>{});
    run();
    tb::error_info result;
    response.receive([](uint64_t) { ADD_FAILURE() << "purge succeeded"; },
                     [&](caf::error& err) { result = to_error_info(err); });
    return result;
  }

  test_session pub = spawn_session();
  test_session a = spawn_session();
};

TEST_F(GroupPurge, DropsPendingMessagesAndKeepsThoseInFlight) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>", 2);
  publish(pub, "jobs.a", 5);
  auto before = counters("work");
  ASSERT_EQ(before.pending, 3u);
  ASSERT_EQ(before.in_flight, 2u);
  auto purged = query<uint64_t>(router, tb::purge_atom_v, std::string{"work"});
  EXPECT_EQ(purged, 3u);
  auto after = counters("work");
  EXPECT_EQ(after.pending, 0u);
  EXPECT_EQ(after.in_flight, 2u);
  EXPECT_EQ(after.dropped, 3u);
  EXPECT_EQ(after.oldest_pending_age_ms, 0u);
  // The bytes held are those of the two in flight, as before the purge.
  EXPECT_EQ(after.held_bytes, before.held_bytes * 2 / 5);
  // The member may still answer what it holds; nothing else comes.
  auto held = ids_of(a.sink->deliveries());
  ASSERT_EQ(held.size(), 2u);
  ack(a, held);
  auto done = counters("work");
  EXPECT_EQ(done.acked, 2u);
  EXPECT_EQ(done.in_flight, 0u);
  EXPECT_EQ(done.held_bytes, 0u);
  EXPECT_EQ(a.sink->deliveries().size(), 2u);
  // received = acked + dropped + held
  EXPECT_EQ(done.received, done.acked + done.dropped);
}

TEST_F(GroupPurge, DropsDelayedRedeliveriesToo) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>", 1);
  publish(pub, "jobs.a", 1);
  nack(a, ids_of(a.sink->deliveries()), 60'000); // parked for a minute
  ASSERT_EQ(counters("work").pending, 1u);
  EXPECT_EQ(query<uint64_t>(router, tb::purge_atom_v, std::string{"work"}), 1u);
  EXPECT_EQ(counters("work").pending, 0u);
  pass(2s);
  EXPECT_EQ(a.sink->deliveries().size(), 1u); // the nacked one never returns
}

TEST_F(GroupPurge, TheGroupGoesOnAfterAPurge) {
  create_group("work", group_settings("jobs.>"));
  publish(pub, "jobs.a", 4); // no member yet: all pending
  EXPECT_EQ(query<uint64_t>(router, tb::purge_atom_v, std::string{"work"}), 4u);
  EXPECT_EQ(query<uint64_t>(router, tb::purge_atom_v, std::string{"work"}), 0u);
  join(a, 1, "work", "jobs.>");
  EXPECT_TRUE(a.sink->deliveries().empty());
  publish(pub, "jobs.b", 2);
  EXPECT_EQ(a.sink->deliveries().size(), 2u);
  EXPECT_EQ(counters("work").received, 6u);
}

TEST_F(GroupPurge, AnUnknownGroupIsNotFound) {
  auto err = purge_error("nope");
  EXPECT_EQ(err.code, tb::ec::unknown_group);
  EXPECT_NE(err.text.find("no group named \"nope\""), std::string::npos)
      << err.text;
}

} // namespace
} // namespace tb::test
