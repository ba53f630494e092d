// The log lines actors decide to write (issue 11): refusals with their
// timer, slow consumers, a session's last line, dead letters, and groups
// created and deleted. Deterministic: the test coordinator's clock.

#include <string>
#include <vector>

#include "tests/actors/group_fixture.hpp"
#include "tests/log/log_capture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

// Returns true if `line` contains every one of `parts`.
bool has_all(const std::string& line,
             std::initializer_list<const char*> parts) {
  for (auto* part : parts)
    if (line.find(part) == std::string::npos)
      return false;
  return true;
}

class Logging : public group_test {
protected:
  log_capture logs;
  test_session pub = spawn_session(context(), "ipv4:10.0.0.9:9");
};

TEST_F(Logging, AnErrorFrameIsLoggedWithPeerAndReason) {
  auto s = spawn_session(context(), "ipv4:10.0.0.1:1000");
  send_frame(s, subscribe_frame(next_request_id(), 1, "a..b"));
  run();
  ASSERT_EQ(s.sink->of_kind(kind::kError).size(), 1u);
  auto lines = logs.matching("request refused");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has_all(lines[0], {"peer=ipv4:10.0.0.1:1000", "request=subscribe",
                                 "reason=invalid_pattern"}))
      << lines[0];
}

TEST_F(Logging, RefusalsAreRateLimitedAndTheSessionReportsTheRestOnItsTimer) {
  auto s = spawn_session(context(), "ipv4:10.0.0.1:1000");
  for (uint64_t i = 0; i < 12; ++i)
    send_frame(s, unsubscribe_frame(next_request_id(), 100 + i));
  run();
  EXPECT_EQ(s.sink->of_kind(kind::kError).size(), 12u); // every one answered
  EXPECT_EQ(logs.matching("request refused").size(), refusal_burst);
  EXPECT_FALSE(logs.contains("suppressed"));
  advance(refusal_interval);
  auto reports = logs.matching("more refusals suppressed");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(has_all(reports[0],
                      {"7 more refusals suppressed in the last "
                       "10 s",
                       "peer=ipv4:10.0.0.1:1000", "kind=unknown_subscription"}))
      << reports[0];
}

TEST_F(Logging, MessagesRefusedInAConfirmedPublishAreLoggedOncePerFrame) {
  send_frame(pub,
             publish_frame(next_request_id(), {make_message("ok", "a"),
                                               make_message("$sys.x", "b"),
                                               make_message("$sys.y", "c")}));
  run();
  auto lines = logs.matching("request refused");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has_all(lines[0], {"request=publish", "reason=reserved_topic",
                                 "2 of 3 messages refused"}))
      << lines[0];
}

TEST_F(Logging, ASlowSubscriberIsLoggedWhenItLosesAndWhenItCatchesUp) {
  auto ctx = context();
  ctx.limits.subscription_buffer = 4;
  auto s = spawn_session(ctx, "ipv4:10.0.0.2:2000");
  subscribe(s, 7, "t.>");
  s.sink->set_busy();
  publish(pub, "t.a", 10);
  auto losing = logs.matching("slow consumer losing messages");
  ASSERT_EQ(losing.size(), 1u);
  EXPECT_TRUE(has_all(losing[0], {"WARN", "peer=ipv4:10.0.0.2:2000",
                                  "subscription=7", "pattern=t.>"}))
      << losing[0];
  EXPECT_FALSE(logs.contains("caught up"));
  s.sink->complete_write();
  run();
  auto caught_up = logs.matching("slow consumer caught up");
  ASSERT_EQ(caught_up.size(), 1u);
  EXPECT_TRUE(has_all(caught_up[0], {"subscription=7", "total=6"}))
      << caught_up[0];
}

TEST_F(Logging, NoLineIsWrittenPerMessageAtInfo) {
  auto s = spawn_session(context(), "ipv4:10.0.0.3:3000");
  subscribe(s, 1, "t.>");
  logs.clear();
  publish(pub, "t.a", 200);
  EXPECT_EQ(s.sink->deliveries().size(), 200u);
  EXPECT_TRUE(logs.lines().empty()) << logs.lines().front();
}

TEST_F(Logging, ASessionThatEndsWritesItsCountsOnce) {
  auto s = spawn_session(context(), "ipv4:10.0.0.4:4000");
  subscribe(s, 1, "t.>");
  publish(pub, "t.a", 3);
  publish(s, "u.b", 2);
  self->send(s.hdl, tb::closed_atom_v); // the client half-closed
  run();
  ASSERT_TRUE(terminated(s.hdl));
  auto lines = logs.matching("session closed peer=ipv4:10.0.0.4:4000");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(
      has_all(lines[0], {"ended=client_closed", "published=2", "delivered=3",
                         "dropped=0", "subscriptions=1", "refused=0"}))
      << lines[0];
}

TEST_F(Logging, AStreamThatBrokeEndsTheSessionWithTheBridgesReason) {
  auto s = spawn_session(context(), "ipv4:10.0.0.5:5000");
  s.sink->ended = "client_cancelled";
  self->send_exit(s.hdl, caf::exit_reason::user_shutdown); // as on_done does
  run();
  ASSERT_TRUE(terminated(s.hdl));
  EXPECT_EQ(logs.matching("ended=client_cancelled").size(), 1u);
}

TEST_F(Logging, PublishersWithoutAStreamWriteNoSessionLines) {
  auto unary = sys.spawn(tb::session_actor_impl, context(), frame_sink_ptr{},
                         tb::access_grant{});
  self->send_exit(unary, caf::exit_reason::user_shutdown);
  run();
  EXPECT_FALSE(logs.contains("session closed"));
}

TEST_F(Logging, GroupsCreatedAndDeletedAreLoggedByTheRouter) {
  create_group("audit", group_settings("audit.>"));
  auto created = logs.matching("group created");
  ASSERT_EQ(created.size(), 1u);
  EXPECT_TRUE(has_all(created[0], {"group=audit", "pattern=audit.>",
                                   "policy=round_robin", "origin=request"}))
      << created[0];
  publish(pub, "audit.a", 2);
  auto dropped =
      query<uint64_t>(router, tb::delete_atom_v, std::string{"audit"});
  EXPECT_EQ(dropped, 2u);
  auto deleted = logs.matching("group deleted");
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_TRUE(
      has_all(deleted[0], {"group=audit", "pattern=audit.>", "dropped=2"}))
      << deleted[0];
}

TEST_F(Logging, AutoCreatedGroupsSaySo) {
  auto a = spawn_session();
  join(a, 1, "workers", "jobs.>");
  EXPECT_EQ(logs.matching("group created group=workers").size(), 1u);
  EXPECT_TRUE(logs.contains("origin=auto"));
}

TEST_F(Logging, DeadLettersAreLoggedByTheirGroup) {
  auto a = spawn_session();
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 1);
  auto got = a.sink->deliveries();
  ASSERT_EQ(got.size(), 1u);
  reject(a, {got[0].delivery_id()});
  auto lines = logs.matching("message dead-lettered");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has_all(lines[0], {"group=work", "reason=rejected",
                                 "topic=$dlq.work", "dead_lettered=1"}))
      << lines[0];
}

TEST_F(Logging, DeadLettersBeyondTheBurstAreReportedOnTheGroupsTimer) {
  auto a = spawn_session();
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>");
  publish(pub, "jobs.a", 9);
  reject(a, ids_of(a.sink->deliveries()));
  EXPECT_EQ(logs.matching("message dead-lettered").size(), refusal_burst);
  advance(refusal_interval);
  EXPECT_TRUE(logs.contains("4 more dead letters suppressed in the last 10 s "
                            "group=work kind=rejected suppressed=4"))
      << (logs.lines().empty() ? "" : logs.lines().back());
}

} // namespace
} // namespace tb::test
