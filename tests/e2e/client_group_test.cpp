// End to end: consumer-group deliveries through the asynchronous client's
// delivery object: ack, nack with delay, reject, in progress, automatic
// credit and coalesced answers.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "client_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
using ClientGroupTest = AsyncClientTest;

// Group settings with `pattern` and a short ack_wait.
tinybroker::v1::GroupSettings settings(const std::string& pattern,
                                       uint32_t ack_wait_ms = 30000) {
  tinybroker::v1::GroupSettings result;
  result.set_pattern(pattern);
  result.set_ack_wait_ms(ack_wait_ms);
  return result;
}

// Deliveries a handler keeps for the test to answer.
class held_deliveries {
public:
  client::delivery_handler handler() {
    return [this](client::delivery d) {
      std::lock_guard<std::mutex> guard{mutex_};
      held_.push_back(std::move(d));
      cv_.notify_all();
    };
  }

  // Waits for `count` held deliveries and takes them.
  std::vector<client::delivery> take(std::size_t count) {
    std::unique_lock<std::mutex> guard{mutex_};
    cv_.wait_for(guard, patience, [&] { return held_.size() >= count; });
    std::vector<client::delivery> result;
    while (!held_.empty() && result.size() < count) {
      result.push_back(std::move(held_.front()));
      held_.pop_front();
    }
    return result;
  }

  // How many are held now.
  std::size_t size() {
    std::lock_guard<std::mutex> guard{mutex_};
    return held_.size();
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<client::delivery> held_;
};

TEST_F(ClientGroupTest, AcksFromTheDeliveryObjectAreCoalescedIntoOneFrame) {
  auto options = test_options();
  options.answer_linger = 1s;
  auto client = make_client(options);
  ASSERT_TRUE(client->create_group("acker", settings("jobs.>")).ok());
  for (int i = 0; i < 20; ++i)
    client->publish({"jobs.x", std::to_string(i), {}, {}});
  ASSERT_TRUE(client->flush(patience));
  delivery_log log;
  client::subscribe_options join;
  join.group = "acker";
  auto sub = client->subscribe(
      "jobs.>", log.handler([](client::delivery& d) { EXPECT_TRUE(d.ack()); }),
      join);
  ASSERT_EQ(log.wait_for(20).size(), 20u);
  EXPECT_TRUE(
      eventually([&] { return group_info("acker").counters().acked() == 20; }));
  EXPECT_EQ(group_info("acker").counters().in_flight(), 0u);
  EXPECT_EQ(client->stats().answers, 20u);
  EXPECT_EQ(client->stats().answer_frames, 1u);
}

TEST_F(ClientGroupTest, CreditFollowsMaxInFlightAndFreesOnAck) {
  auto client = make_client();
  held_deliveries held;
  client::subscribe_options join;
  join.group = "credit";
  join.max_in_flight = 2;
  auto sub = client->subscribe("jobs.>", held.handler(), join);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  for (int i = 1; i <= 5; ++i)
    client->publish({"jobs.x", std::to_string(i), {}, {}});
  ASSERT_TRUE(client->flush(patience));
  auto first = held.take(2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_FALSE(eventually([&] { return held.size() > 0; }, quiet_period));
  for (auto& d : first)
    EXPECT_TRUE(d.ack());
  auto next = held.take(2);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].payload(), "3");
  EXPECT_EQ(next[1].payload(), "4");
}

TEST_F(ClientGroupTest, NackWithDelayRedeliversAfterTheDelay) {
  auto client = make_client();
  held_deliveries held;
  client::subscribe_options join;
  join.group = "retry";
  auto sub = client->subscribe("jobs.>", held.handler(), join);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  client->publish({"jobs.x", "again", {}, {}});
  auto first = held.take(1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].attempt(), 1u);
  auto nacked_at = std::chrono::steady_clock::now();
  EXPECT_TRUE(first[0].nack(300ms));
  EXPECT_FALSE(first[0].ack()) << "a delivery is answered once";
  auto second = held.take(1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_GE(std::chrono::steady_clock::now() - nacked_at, 300ms);
  EXPECT_EQ(second[0].attempt(), 2u);
  EXPECT_EQ(second[0].payload(), "again");
  EXPECT_TRUE(second[0].ack());
}

TEST_F(ClientGroupTest, RejectSendsTheMessageToTheDeadLetterTopic) {
  auto client = make_client();
  delivery_log dead;
  auto dlq = client->subscribe("$dlq.strict", dead.handler());
  ASSERT_TRUE(dlq->wait_subscribed(patience).ok());
  client::subscribe_options join;
  join.group = "strict";
  delivery_log seen;
  auto sub = client->subscribe(
      "jobs.>",
      seen.handler([](client::delivery& d) { EXPECT_TRUE(d.reject()); }), join);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  client->publish({"jobs.bad", "poison", {}, {}});
  auto letters = dead.wait_for(1);
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0].topic, "$dlq.strict");
  EXPECT_EQ(letters[0].payload, "poison");
  EXPECT_EQ(seen.wait_for(1).size(), 1u);
}

TEST_F(ClientGroupTest, InProgressHoldsTheDeliveryPastAckWait) {
  auto client = make_client();
  ASSERT_TRUE(client->create_group("slow", settings("jobs.>", 400)).ok());
  held_deliveries held;
  client::subscribe_options join;
  join.group = "slow";
  auto sub = client->subscribe("jobs.>", held.handler(), join);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  client->publish({"jobs.x", "long job", {}, {}});
  auto first = held.take(1);
  ASSERT_EQ(first.size(), 1u);
  // Three times ack_wait, reporting progress every 150 ms: no redelivery.
  auto until = std::chrono::steady_clock::now() + 1200ms;
  while (std::chrono::steady_clock::now() < until) {
    EXPECT_TRUE(first[0].in_progress());
    EXPECT_FALSE(eventually([&] { return held.size() > 0; }, 150ms));
  }
  // Without progress reports it comes back after ack_wait.
  auto again = held.take(1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].attempt(), 2u);
}

} // namespace
} // namespace tb::test
