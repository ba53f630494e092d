// End to end: the Stats call against a real broker process (spec 11).

#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

#include "group_admin_fixture.hpp"

namespace tb::test {
namespace {

class StatsTest : public GroupAdminTest {
protected:
  /// Calls Stats with `req`; fills `reply`.
  grpc::Status stats(const pb::StatsRequest& req, pb::StatsReply& reply) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    return conn_->stub().Stats(&ctx, req, &reply);
  }

  /// Calls Stats with `req` and expects it to succeed.
  pb::StatsReply stats(const pb::StatsRequest& req = {}) {
    pb::StatsReply reply;
    auto status = stats(req, reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return reply;
  }
};

TEST_F(StatsTest, BrokerTotalsCountWhatWasPublishedAndDelivered) {
  auto sub = subscriber(1, "orders.>");
  publish({"orders.a", "orders.b", "orders.c", "nobody.listens"});
  ASSERT_EQ(sub->receive(3, patience).size(), 3u);
  auto reply = stats();
  auto& b = reply.broker();
  EXPECT_EQ(b.published(), 4u);
  EXPECT_EQ(b.unrouted(), 1u);
  EXPECT_EQ(b.delivered(), 3u);
  EXPECT_EQ(b.dropped(), 0u);
  EXPECT_EQ(b.sessions(), 1u);
  EXPECT_EQ(b.subscriptions(), 1u);
  EXPECT_GE(b.topics(), 3u);
  EXPECT_FALSE(b.version().empty());
  EXPECT_GT(b.rss_bytes(), 1u << 20);
  EXPECT_GT(b.uptime_ms(), 0u);
  auto& latency = b.delivery_latency();
  EXPECT_EQ(latency.count(), 3u);
  ASSERT_EQ(latency.upper_bounds_seconds_size(),
            latency.cumulative_counts_size());
  EXPECT_LE(latency.cumulative_counts(0), 3u);
  EXPECT_EQ(*latency.cumulative_counts().rbegin(), 3u)
      << "every delivery of this test took under 10 s";
  EXPECT_GT(latency.sum_seconds(), 0.0);
  ASSERT_EQ(reply.sessions_size(), 1);
  EXPECT_EQ(reply.sessions(0).delivered(), 3u);
  EXPECT_EQ(reply.sessions(0).subscriptions(), 1u);
  EXPECT_NE(reply.sessions(0).peer().find("127.0.0.1"), std::string::npos)
      << reply.sessions(0).peer();
  EXPECT_EQ(reply.topics_size(), 0) << "no topic listed unless asked for";
}

TEST_F(StatsTest, CountsOfEndedSessionsStayInTheTotals) {
  {
    auto sub = subscriber(1, "t");
    auto pub = conn_->open_session();
    ASSERT_TRUE(pub->publish({{"t", "x", {}, {}}, {"t", "y", {}, {}}}, true));
    ASSERT_TRUE(pub->wait_for(pb::ServerFrame::kPublishConfirm, patience));
    ASSERT_EQ(sub->receive(2, patience).size(), 2u);
    EXPECT_TRUE(pub->close().ok());
    EXPECT_TRUE(sub->close().ok());
  }
  // The final counts reach the router as the session actor ends, which may
  // be a moment after the client saw its stream end.
  auto reply = stats();
  auto deadline = std::chrono::steady_clock::now() + patience;
  while ((reply.broker().delivered() < 2 || reply.broker().sessions() != 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    reply = stats();
  }
  EXPECT_EQ(reply.broker().sessions(), 0u);
  EXPECT_EQ(reply.broker().published(), 2u);
  EXPECT_EQ(reply.broker().delivered(), 2u);
  EXPECT_EQ(reply.broker().delivery_latency().count(), 2u);
}

TEST_F(StatsTest, GroupsShowTheirMembersWithCreditAndAnswers) {
  ASSERT_TRUE(create_group("jobs", on("jobs.>")).ok());
  auto worker_session = worker("jobs", "jobs.>", 3);
  publish({"jobs.1", "jobs.2", "jobs.3", "jobs.4", "jobs.5"});
  auto got = worker_session->receive(3, patience);
  ASSERT_EQ(got.size(), 3u);
  ASSERT_TRUE(worker_session->ack({got[0].delivery_id()}));
  ASSERT_TRUE(worker_session->nack({got[1].delivery_id()}, 60000));
  // One more arrives for the acked one's credit and one for the nacked one.
  ASSERT_EQ(worker_session->receive(2, patience).size(), 2u);
  auto reply = stats();
  ASSERT_EQ(reply.groups_size(), 1);
  auto& group = reply.groups(0);
  EXPECT_EQ(group.name(), "jobs");
  EXPECT_EQ(group.counters().received(), 5u);
  EXPECT_EQ(group.counters().acked(), 1u);
  EXPECT_EQ(group.counters().in_flight(), 3u);
  EXPECT_EQ(group.counters().pending(), 1u) << "the nacked one, delayed";
  EXPECT_EQ(group.counters().held_bytes(), 4 * std::string{"jobs.1"}.size());
  ASSERT_EQ(group.members_size(), 1);
  auto& member = group.members(0);
  EXPECT_EQ(member.subscription_id(), 1u);
  EXPECT_EQ(member.in_flight(), 3u);
  EXPECT_EQ(member.max_in_flight(), 3u);
  EXPECT_EQ(member.credit(), 0u);
  EXPECT_EQ(member.acks(), 1u);
  EXPECT_EQ(member.nacks(), 1u);
  EXPECT_TRUE(member.active());
  EXPECT_NE(member.peer().find("127.0.0.1"), std::string::npos);
  EXPECT_EQ(reply.broker().groups(), 1u);
}

TEST_F(StatsTest, TopicsAreListedByPatternSortedAndCutToTheLimit) {
  auto sub = subscriber(1, "a.>");
  publish({"a.5", "a.3", "a.1", "a.4", "a.2", "b.1"});
  ASSERT_EQ(sub->receive(5, patience).size(), 5u);
  pb::StatsRequest req;
  req.set_topic_pattern("a.*");
  req.set_limit(3);
  auto reply = stats(req);
  EXPECT_EQ(reply.topics_matched(), 5u);
  ASSERT_EQ(reply.topics_size(), 3);
  EXPECT_EQ(reply.topics(0).name(), "a.1");
  EXPECT_EQ(reply.topics(1).name(), "a.2");
  EXPECT_EQ(reply.topics(2).name(), "a.3");
  EXPECT_EQ(reply.topics(0).destinations(), 1u);
}

TEST_F(StatsTest, FiltersSelectGroupsAndSessions) {
  ASSERT_TRUE(create_group("billing", on("billing.>")).ok());
  ASSERT_TRUE(create_group("shipping", on("shipping.>")).ok());
  ASSERT_TRUE(create_group("shipping-eu", on("eu.shipping.>")).ok());
  auto sub = subscriber(1, "x");
  pb::StatsRequest req;
  req.set_group_filter("shipping");
  req.set_session_filter("no-such-peer");
  auto reply = stats(req);
  EXPECT_EQ(reply.groups_matched(), 2u);
  ASSERT_EQ(reply.groups_size(), 2);
  EXPECT_EQ(reply.groups(0).name(), "shipping");
  EXPECT_EQ(reply.groups(1).name(), "shipping-eu");
  EXPECT_EQ(reply.sessions_matched(), 0u);
  EXPECT_EQ(reply.broker().sessions(), 1u) << "totals ignore the filters";
  EXPECT_EQ(reply.broker().groups(), 3u);
}

TEST_F(StatsTest, SubscriptionsCountEachGroupMembershipNotEachGroup) {
  // 1 fan-out subscription, 3 members of one group, 1 of another: 5, as
  // the proto and the metric's help say (the count was 3: each group once).
  auto fanout = subscriber(1, "news.>");
  std::vector<std::unique_ptr<client::session>> members;
  for (int i = 0; i < 3; ++i)
    members.push_back(worker("jobs", "jobs.>"));
  members.push_back(worker("mail", "mail.>"));
  auto reply = stats();
  EXPECT_EQ(reply.broker().subscriptions(), 5u);
  EXPECT_EQ(reply.broker().groups(), 2u);
  uint64_t per_session = 0;
  for (auto& s : reply.sessions())
    per_session += s.subscriptions();
  EXPECT_EQ(per_session, 5u) << "the sessions' own counts add up the same";
  // One member leaves (its stream ends): 4.
  members.pop_back();
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (reply.broker().subscriptions() != 4u &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    reply = stats();
  }
  EXPECT_EQ(reply.broker().subscriptions(), 4u);
}

TEST_F(StatsTest, GroupsWithoutMembersCountNoSubscription) {
  // 6 groups and no session: 0 (the count was 6).
  for (auto name : {"g1", "g2", "g3", "g4", "g5", "g6"})
    ASSERT_TRUE(create_group(name, on(std::string{name} + ".>")).ok());
  auto reply = stats();
  EXPECT_EQ(reply.broker().groups(), 6u);
  EXPECT_EQ(reply.broker().sessions(), 0u);
  EXPECT_EQ(reply.broker().subscriptions(), 0u);
}

TEST_F(StatsTest, ABadTopicPatternIsRefusedNamingIt) {
  pb::StatsRequest req;
  req.set_topic_pattern("a..b");
  pb::StatsReply reply;
  auto status = stats(req, reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("topic_pattern"), std::string::npos)
      << status.error_message();
}

TEST_F(StatsTest, TheActorViewListsEveryKindWithItsMailbox) {
  ASSERT_TRUE(create_group("jobs", on("jobs.>")).ok());
  auto sub = subscriber(1, "t.1");
  publish({"t.1"});
  ASSERT_EQ(sub->receive(1, patience).size(), 1u);
  pb::StatsRequest req;
  req.set_actors(true);
  req.set_topic_pattern(">");
  auto reply = stats(req);
  auto count = [&](const std::string& kind) {
    return std::count_if(reply.actors().begin(), reply.actors().end(),
                         [&](auto& a) { return a.kind() == kind; });
  };
  EXPECT_EQ(count("router"), 1);
  EXPECT_EQ(count("topic_shard"), 4);
  EXPECT_EQ(count("group"), 1);
  EXPECT_EQ(count("session"), 1);
  EXPECT_GE(count("publisher"), 1);
  for (auto& actor : reply.actors()) {
    EXPECT_NE(actor.id(), 0u) << actor.kind();
    EXPECT_LT(actor.mailbox(), 1000u) << actor.kind() << " " << actor.name();
  }
  auto group = std::find_if(reply.actors().begin(), reply.actors().end(),
                            [](auto& a) { return a.kind() == "group"; });
  EXPECT_EQ(group->name(), "jobs (round_robin)");
}

TEST_F(StatsTest, AnswersWhileActorsHaveFullMailboxes) {
  // Asking a busy actor its mailbox length must not disturb its mailbox
  // (mailbox().size() did: UBSan halted the broker in CAF's queue).
  ASSERT_TRUE(create_group("backlog", on("backlog.>")).ok());
  auto pub = conn_->open_session();
  std::vector<client::outgoing_message> batch;
  for (int i = 0; i < 1000; ++i)
    batch.push_back({"backlog.x", "p", {}, {}});
  for (int round = 0; round < 50; ++round) {
    ASSERT_TRUE(pub->publish(batch));
    pb::StatsRequest req;
    req.set_actors(true);
    req.set_topic_pattern(">");
    pb::StatsReply reply;
    ASSERT_TRUE(stats(req, reply).ok()) << "round " << round;
  }
  ASSERT_TRUE(pub->publish(batch, true));
  ASSERT_TRUE(pub->wait_for(pb::ServerFrame::kPublishConfirm, patience));
  auto reply = stats();
  ASSERT_EQ(reply.groups_size(), 1);
  EXPECT_EQ(reply.groups(0).counters().received(), 51000u);
}

} // namespace
} // namespace tb::test
