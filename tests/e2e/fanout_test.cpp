// End to end: fan-out subscriptions against a real broker (spec 2, 3, 4, 5).

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "e2e_fixture.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;

using FanoutTest = BrokerTest;
using strings = std::vector<std::string>;

TEST_F(FanoutTest, ExactSubscriptionReceivesMessageWithIdTimeAndHeaders) {
  auto sub = subscriber(1, "orders.eu.created");
  auto before = std::chrono::system_clock::now();
  client::outgoing_message msg{
      "orders.eu.created", "payload-1", {{"trace", "abc"}}, "customer-7"};
  std::vector<pb::PublishResult> results;
  ASSERT_TRUE(conn_->publish({msg}, &results).ok());
  ASSERT_EQ(results.size(), 1u);
  auto got = sub->receive(1, patience);
  ASSERT_EQ(got.size(), 1u);
  auto& d = got[0];
  EXPECT_EQ(d.subscription_id(), 1u);
  EXPECT_EQ(d.topic(), "orders.eu.created");
  EXPECT_EQ(d.payload(), "payload-1");
  EXPECT_EQ(d.key(), "customer-7");
  EXPECT_EQ(d.headers().at("trace"), "abc");
  EXPECT_EQ(d.message_id(), results[0].id());
  EXPECT_GT(d.message_id(), 0u);
  auto accepted = std::chrono::system_clock::time_point{
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds{d.accepted_unix_nanos()})};
  EXPECT_GE(accepted, before - std::chrono::seconds(1));
  EXPECT_LE(accepted, std::chrono::system_clock::now());
  EXPECT_EQ(d.delivery_id(), 0u) << "fan-out deliveries need no answer";
}

TEST_F(FanoutTest, WildcardsMatchAsSpecifiedAndNotTheBareParent) {
  auto session = conn_->open_session();
  subscribe(*session, 1, "orders.*.created");
  subscribe(*session, 2, "orders.>");
  publish({"orders", "orders.eu", "orders.eu.created", "orders.eu.paid",
           "shipping.eu.created"});
  auto got = session->receive(4, patience);
  strings star, greater;
  for (auto& d : got)
    (d.subscription_id() == 1 ? star : greater).push_back(d.topic());
  EXPECT_EQ(star, strings({"orders.eu.created"}));
  EXPECT_EQ(greater,
            strings({"orders.eu", "orders.eu.created", "orders.eu.paid"}));
  EXPECT_TRUE(session->receive(1, quiet_period).empty());
}

TEST_F(FanoutTest, EverySubscriberGetsACopy) {
  auto a = subscriber(1, "metrics.>");
  auto b = subscriber(7, "metrics.cpu");
  auto c = subscriber(3, "*.cpu");
  publish({"metrics.cpu"});
  for (auto* s : {a.get(), b.get(), c.get()}) {
    auto got = s->receive(1, patience);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].topic(), "metrics.cpu");
  }
}

TEST_F(FanoutTest, OnePublishersOrderHoldsAcrossTopics) {
  auto sub = subscriber(1, "orders.>");
  auto publisher = conn_->open_session();
  constexpr int orders = 1500;
  std::vector<client::outgoing_message> batch;
  for (int i = 0; i < orders; ++i) {
    auto id = std::to_string(i % 37);
    batch.push_back(
        {"orders." + id + ".created", std::to_string(2 * i), {}, {}});
    batch.push_back(
        {"orders." + id + ".paid", std::to_string(2 * i + 1), {}, {}});
    if (batch.size() >= 100 || i + 1 == orders) {
      ASSERT_TRUE(publisher->publish(batch));
      batch.clear();
    }
  }
  auto got = sub->receive(2 * orders, patience);
  ASSERT_EQ(got.size(), 2u * orders);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].payload(), std::to_string(i)) << "at " << i;
    if (i > 0) {
      ASSERT_GT(got[i].message_id(), got[i - 1].message_id());
    }
  }
}

TEST_F(FanoutTest, StreamPublishConfirmCarriesIdsInOrder) {
  auto session = conn_->open_session();
  ASSERT_TRUE(session->publish(
      {{"a.b", "1", {}, {}}, {"a.c", "2", {}, {}}, {"a.d", "3", {}, {}}}, true,
      42));
  auto frame = session->wait_for(pb::ServerFrame::kPublishConfirm, patience);
  ASSERT_TRUE(frame.has_value());
  auto& confirm = frame->publish_confirm();
  EXPECT_EQ(confirm.request_id(), 42u);
  ASSERT_EQ(confirm.results_size(), 3);
  EXPECT_GT(confirm.results(0).id(), 0u);
  EXPECT_LT(confirm.results(0).id(), confirm.results(1).id());
  EXPECT_LT(confirm.results(1).id(), confirm.results(2).id());
}

TEST_F(FanoutTest, UnsubscribeStopsDeliveries) {
  auto session = conn_->open_session();
  subscribe(*session, 1, "news.>");
  subscribe(*session, 2, "marker");
  ASSERT_TRUE(session->unsubscribe(1, 9));
  auto frame = session->wait_for(pb::ServerFrame::kUnsubscribed, patience);
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->unsubscribed().subscription_id(), 1u);
  publish({"news.today", "marker"});
  auto got = session->receive(1, patience);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].topic(), "marker");
  EXPECT_TRUE(session->receive(1, quiet_period).empty());
}

TEST_F(FanoutTest, ASubscribeBatchIsAnsweredOnceWithTheIdsInPlace) {
  auto session = conn_->open_session();
  ASSERT_TRUE(session->subscribe_batch({{1, "batch.a"},
                                        {2, "batch..bad"},
                                        {3, "batch.*"},
                                        {4, "jobs.>", "batch-workers"}},
                                       41));
  std::vector<pb::ServerFrame> before;
  auto answer =
      session->wait_for(pb::ServerFrame::kSubscribedBatch, patience, &before);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->subscribed_batch().request_id(), 41u);
  std::vector<uint64_t> ids{
      answer->subscribed_batch().subscription_ids().begin(),
      answer->subscribed_batch().subscription_ids().end()};
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<uint64_t>{1, 3, 4}));
  ASSERT_EQ(before.size(), 1u); // the refused entry's error, first
  ASSERT_TRUE(before[0].has_error());
  EXPECT_EQ(before[0].error().request_id(), 41u);
  EXPECT_EQ(before[0].error().subscription_id(), 2u);
  EXPECT_EQ(before[0].error().error().code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  publish({"batch.a", "jobs.x"});
  auto got = session->receive(3, patience);
  std::vector<uint64_t> delivered;
  for (auto& d : got)
    delivered.push_back(d.subscription_id());
  std::sort(delivered.begin(), delivered.end());
  EXPECT_EQ(delivered, (std::vector<uint64_t>{1, 3, 4}));
}

TEST_F(FanoutTest, AKilledClientDoesNotDisturbTheOthers) {
  auto doomed = subscriber(1, "load.>");
  auto survivor = subscriber(1, "load.>");
  auto publisher = conn_->open_session();
  std::vector<client::outgoing_message> batch(200, {"load.x", "p", {}, {}});
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(publisher->publish(batch));
  doomed->cancel();
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(publisher->publish(batch));
  EXPECT_EQ(survivor->receive(4000, patience).size(), 4000u);
  auto late = subscriber(5, "load.>");
  publish({"load.y"});
  auto got = late->receive(1, patience);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].topic(), "load.y");
}

TEST_F(FanoutTest, UnroutedMessageIsAcceptedWithAnId) {
  std::vector<pb::PublishResult> results;
  ASSERT_TRUE(conn_->publish({{"nobody.listens", "x", {}, {}}}, &results).ok());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].has_error());
  EXPECT_GT(results[0].id(), 0u);
}

TEST_F(FanoutTest, ClientsMayNotPublishToBrokerTopics) {
  auto sub = subscriber(1, "$dlq.orders");
  std::vector<pb::PublishResult> results;
  ASSERT_TRUE(
      conn_
          ->publish({{"$dlq.orders", "x", {}, {}}, {"ok.topic", "y", {}, {}}},
                    &results)
          .ok());
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[0].has_error());
  EXPECT_EQ(results[0].error().code(), 7); // PERMISSION_DENIED
  EXPECT_EQ(results[0].error().reason(), "reserved_topic");
  EXPECT_EQ(results[0].id(), 0u);
  EXPECT_FALSE(results[1].has_error());
  EXPECT_TRUE(sub->receive(1, quiet_period).empty());
}

} // namespace
} // namespace tb::test
