// End to end: TTL, delayed delivery and priorities in consumer groups
// (issue 29) through a real broker, with messages built as raw proto (the
// fields of Message 6-9), so that no client support is needed.

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "e2e_fixture.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;
using strings = std::vector<std::string>;
using steady = std::chrono::steady_clock;

class GroupTimeTest : public BrokerTest {
protected:
  // Creates group "work" on "jobs.>" with `settings`; returns the status.
  grpc::Status create_work(pb::GroupSettings settings,
                           pb::GroupInfo* reply = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    pb::CreateGroupRequest req;
    req.set_name("work");
    *req.mutable_settings() = std::move(settings);
    req.mutable_settings()->set_pattern("jobs.>");
    pb::GroupInfo ignored;
    return conn_->stub().CreateGroup(&ctx, req, reply ? reply : &ignored);
  }

  // Returns a message to "jobs.a" with `payload`.
  static pb::Message message(const std::string& payload) {
    pb::Message msg;
    msg.set_topic("jobs.a");
    msg.set_payload(payload);
    return msg;
  }

  // Publishes `msgs` with the unary call; returns their results.
  std::vector<pb::PublishResult> publish_raw(std::vector<pb::Message> msgs) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    pb::PublishRequest req;
    for (auto& msg : msgs)
      *req.add_messages() = std::move(msg);
    pb::PublishReply reply;
    auto status = conn_->stub().Publish(&ctx, req, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {reply.results().begin(), reply.results().end()};
  }

  // Returns the counters of "work" as ListGroups shows them.
  pb::GroupCounters counters() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    pb::ListGroupsReply reply;
    auto status = conn_->stub().ListGroups(&ctx, {}, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    for (auto& g : reply.groups())
      if (g.name() == "work")
        return g.counters();
    ADD_FAILURE() << "no group work";
    return {};
  }

  // Joins "work" with `max_in_flight` and waits for the Subscribed frame.
  std::unique_ptr<client::session> worker(uint32_t max_in_flight = 0) {
    auto session = conn_->open_session();
    EXPECT_TRUE(session->join(1, "work", "jobs.>", max_in_flight));
    EXPECT_TRUE(session->wait_for(pb::ServerFrame::kSubscribed, patience));
    return session;
  }

  static strings payloads(const std::vector<pb::Delivery>& ds) {
    strings result;
    for (auto& d : ds)
      result.push_back(d.payload());
    return result;
  }
};

TEST_F(GroupTimeTest, HigherPriorityIsDeliveredFirst) {
  ASSERT_TRUE(create_work({}).ok());
  std::vector<pb::Message> msgs;
  for (auto [payload, prio] : std::vector<std::pair<std::string, uint32_t>>{
           {"a0", 0}, {"b5", 5}, {"c9", 9}, {"d5", 5}}) {
    auto msg = message(payload);
    msg.set_priority(prio);
    msgs.push_back(msg);
  }
  for (auto& r : publish_raw(msgs))
    EXPECT_FALSE(r.has_error()) << r.error().message();
  auto w = worker();
  auto got = w->receive(4, patience);
  EXPECT_EQ(payloads(got), (strings{"c9", "b5", "d5", "a0"}));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].priority(), 9u);
  EXPECT_EQ(got[3].priority(), 0u);
}

TEST_F(GroupTimeTest, DelayedMessageComesNotBeforeItsDueTime) {
  ASSERT_TRUE(create_work({}).ok());
  auto w = worker();
  auto delayed = message("later");
  delayed.set_delay_ms(400);
  auto start = steady::now();
  auto results = publish_raw({delayed, message("now")});
  ASSERT_EQ(results.size(), 2u);
  auto first = w->receive(1, patience);
  EXPECT_EQ(payloads(first), strings{"now"});
  auto c = counters();
  EXPECT_EQ(c.scheduled(), 1u);
  EXPECT_GT(c.next_due_unix_ms(), 0);
  auto second = w->receive(1, patience);
  auto waited = steady::now() - start;
  EXPECT_EQ(payloads(second), strings{"later"});
  EXPECT_GE(waited, 400ms);
  EXPECT_EQ(counters().scheduled(), 0u);
}

TEST_F(GroupTimeTest, ExpiredMessageIsDeadLetteredWithReasonExpired) {
  ASSERT_TRUE(create_work({}).ok());
  auto dlq = subscriber(7, "$dlq.work");
  auto msg = message("stale");
  msg.set_ttl_ms(200);
  publish_raw({msg});
  auto letters = dlq->receive(1, patience);
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0].payload(), "stale");
  EXPECT_EQ(letters[0].headers().at("x-tinybroker-reason"), "expired");
  auto c = counters();
  EXPECT_EQ(c.expired_ttl(), 1u);
  EXPECT_EQ(c.pending(), 0u);
}

TEST_F(GroupTimeTest, GroupMaxAgeWithDropDropsAndCounts) {
  pb::GroupSettings settings;
  settings.set_max_age_ms(200);
  settings.set_on_expiry(pb::EXPIRY_DROP);
  settings.set_max_priority(4);
  pb::GroupInfo info;
  ASSERT_TRUE(create_work(settings, &info).ok());
  EXPECT_EQ(info.settings().max_age_ms(), 200u);
  EXPECT_EQ(info.settings().on_expiry(), pb::EXPIRY_DROP);
  EXPECT_EQ(info.settings().max_priority(), 4u);
  publish_raw({message("x")});
  auto deadline = steady::now() + patience;
  while (counters().expired_ttl() == 0 && steady::now() < deadline)
    std::this_thread::sleep_for(20ms);
  auto c = counters();
  EXPECT_EQ(c.expired_ttl(), 1u);
  EXPECT_EQ(c.dropped(), 1u);
  EXPECT_EQ(c.dead_lettered(), 0u);
}

TEST_F(GroupTimeTest, BadPriorityScheduleAndSettingsAreRefused) {
  auto high = message("x");
  high.set_priority(10);
  auto both = message("y");
  both.set_delay_ms(10);
  both.set_not_before_unix_ms(1);
  auto far = message("z");
  far.set_delay_ms(30u * 24 * 3600 * 1000); // beyond the default 7 days
  auto results = publish_raw({high, both, far, message("ok")});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].error().code(), 3);
  EXPECT_EQ(results[0].error().reason(), "invalid_priority");
  EXPECT_EQ(results[1].error().reason(), "invalid_schedule");
  EXPECT_EQ(results[2].error().reason(), "invalid_schedule");
  EXPECT_NE(results[2].error().message().find("limits.max_delay"),
            std::string::npos);
  EXPECT_FALSE(results[3].has_error());
  pb::GroupSettings settings;
  settings.set_max_priority(10);
  auto status = create_work(settings);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("max_priority"), std::string::npos);
}

} // namespace
} // namespace tb::test
