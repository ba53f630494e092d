// End to end: the asynchronous client across a broker restart on the same
// port: subscriptions resume, publishes made during the outage are sent
// after it, and a broker that stays away ends everything with UNAVAILABLE.

#include <condition_variable>
#include <csignal>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "client_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;

class ClientReconnectTest : public AsyncClientTest {
protected:
  /// Stops the broker and waits for its exit.
  void stop_broker() {
    auto code = broker_->stop(SIGTERM);
    ASSERT_TRUE(code.has_value());
  }

  /// Starts a fresh broker on the address of the stopped one, with the
  /// config file `config` if given.
  void start_broker(const std::string& address,
                    const std::string& config = {}) {
    std::vector<std::string> args{"--listen", address};
    if (!config.empty())
      args.insert(args.end(), {"--config", write_temp_file(config, ".toml")});
    broker_ =
        std::make_unique<broker_process>(args, broker_process::default_listen);
    ASSERT_TRUE(broker_->wait_ready()) << broker_->output();
    ASSERT_EQ(broker_->address(), address);
  }
};

TEST_F(ClientReconnectTest, SubscriptionsResumeAfterTheBrokerRestarts) {
  auto client = make_client();
  subscriber_and_worker logs{*client, "orders.>", "workers"};
  auto& fanout = logs.fanout;
  auto& worker = logs.worker;
  auto& sub = logs.sub;
  auto& member = logs.member;
  ASSERT_TRUE(client->publish({"orders.1", "before", {}, {}}).get().ok());
  ASSERT_EQ(fanout.wait_for(1).size(), 1u);
  ASSERT_EQ(worker.wait_for(1).size(), 1u);

  auto address = broker_->address();
  stop_broker();
  start_broker(address);
  ASSERT_TRUE(eventually([&] {
    return sub->times_subscribed() == 2 && member->times_subscribed() == 2;
  })) << "not re-subscribed; state "
      << static_cast<int>(client->state());
  // A stream opened on the dead connection may count too.
  EXPECT_GE(client->stats().connections, 2u);

  // Published by another client, so only the subscriptions can bring it.
  client::async_client other{address, test_options()};
  ASSERT_TRUE(other.publish({"orders.2", "after", {}, {}}).get().ok());
  fanout.wait_for(2);
  worker.wait_for(2);
  EXPECT_EQ(fanout.payloads(), (std::vector<std::string>{"before", "after"}));
  EXPECT_EQ(worker.payloads(), (std::vector<std::string>{"before", "after"}));
  EXPECT_TRUE(sub->active());
}

// Subscribes `n` fan-out subscriptions `<prefix>.<i>` and waits for them.
std::vector<std::shared_ptr<client::subscription>>
subscribe_many(client::async_client& client, const std::string& prefix,
               size_t n, delivery_log& log) {
  std::vector<std::shared_ptr<client::subscription>> subs;
  for (size_t i = 0; i < n; ++i)
    subs.push_back(
        client.subscribe(prefix + "." + std::to_string(i), log.handler()));
  for (auto& sub : subs)
    EXPECT_TRUE(sub->wait_subscribed(patience).ok()) << sub->pattern();
  return subs;
}

// True once every one of `subs` was confirmed `times` times.
bool all_subscribed(
    const std::vector<std::shared_ptr<client::subscription>>& subs,
    uint64_t times) {
  for (auto& sub : subs)
    if (sub->times_subscribed() != times)
      return false;
  return true;
}

TEST_F(ClientReconnectTest, ManySubscriptionsResumeInBatches) {
  // 600 subscriptions go back in three SubscribeBatch frames (256 at most
  // each); each is confirmed through the batch's SubscribedBatch answer.
  auto client = make_client();
  delivery_log log;
  auto subs = subscribe_many(*client, "many", 600, log);
  EXPECT_EQ(client->stats().subscribe_frames, 600u);
  auto address = broker_->address();
  stop_broker();
  start_broker(address);
  ASSERT_TRUE(eventually([&] { return all_subscribed(subs, 2); }));
  client::async_client other{address, test_options()};
  ASSERT_TRUE(other.publish({"many.599", "after", {}, {}}).get().ok());
  EXPECT_EQ(log.wait_for(1).size(), 1u);
  // Three frames per stream opened since (one may open on the dead
  // connection before the broker is back).
  auto stats = client->stats();
  EXPECT_EQ(stats.subscribe_frames, 600u + 3u * (stats.connections - 1));
}

TEST_F(ClientReconnectTest, ABrokerWithALowerBatchLimitGetsSingleFrames) {
  // The restarted broker refuses a batch of 5: the client sends the five
  // subscribes again one frame each.
  auto client = make_client();
  delivery_log log;
  auto subs = subscribe_many(*client, "low", 5, log);
  auto address = broker_->address();
  stop_broker();
  start_broker(address, "[limits]\nmax_subscribe_batch = 2\n");
  ASSERT_TRUE(eventually([&] { return all_subscribed(subs, 2); }));
  for (auto& sub : subs)
    EXPECT_TRUE(sub->active()) << sub->pattern();
  // 5 at first, then a batch per stream opened since, and after the
  // refusal 5 single frames.
  auto stats = client->stats();
  EXPECT_EQ(stats.subscribe_frames, 5u + (stats.connections - 1) + 5u);
}

TEST_F(ClientReconnectTest, DeliveriesOfTheLostStreamCannotBeAnswered) {
  auto client = make_client();
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<client::delivery> held;
  client::subscribe_options join;
  join.group = "holders";
  auto member = client->subscribe(
      "jobs.>",
      [&](client::delivery d) {
        std::lock_guard<std::mutex> guard{mutex};
        held.emplace(std::move(d));
        cv.notify_all();
      },
      join);
  ASSERT_TRUE(member->wait_subscribed(patience).ok());
  ASSERT_TRUE(client->publish({"jobs.1", "held", {}, {}}).get().ok());
  {
    std::unique_lock<std::mutex> guard{mutex};
    ASSERT_TRUE(cv.wait_for(guard, patience, [&] { return held.has_value(); }));
  }
  auto address = broker_->address();
  stop_broker();
  start_broker(address);
  ASSERT_TRUE(eventually([&] { return member->times_subscribed() == 2; }));
  std::lock_guard<std::mutex> guard{mutex};
  EXPECT_FALSE(held->ack()) << "its session ended with the old broker";
}

TEST_F(ClientReconnectTest, PublishesDuringTheOutageAreSentAfterReconnect) {
  auto client = make_client();
  auto address = broker_->address();
  stop_broker();
  ASSERT_TRUE(eventually(
      [&] { return client->state() == client::connection_state::connecting; }));
  auto held = client->publish({"a.b", "during", {}, {}});
  EXPECT_EQ(held.wait_for(quiet_period), std::future_status::timeout);
  start_broker(address);
  ASSERT_EQ(held.wait_for(patience), std::future_status::ready);
  auto result = held.get();
  EXPECT_TRUE(result.ok()) << result.status.error_message();
  EXPECT_EQ(result.id, 1u) << "the first message of the new broker";
}

TEST_F(ClientReconnectTest, ABrokerThatStaysAwayEndsItAllWithUnavailable) {
  auto options = test_options();
  options.reconnect_max_attempts = 3;
  options.reconnect_max_backoff = 200ms;
  auto client = make_client(options);
  delivery_log log;
  client::subscribe_options watch;
  watch.on_end = log.on_end();
  auto sub = client->subscribe("a.>", log.handler(), watch);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  stop_broker();
  auto end = log.wait_end();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(end->error_message().find("gave up"), std::string::npos)
      << end->error_message();
  EXPECT_EQ(client->state(), client::connection_state::closed);
  auto late = client->publish({"a.b", "x", {}, {}}).get();
  EXPECT_EQ(late.status.error_code(), grpc::StatusCode::UNAVAILABLE);
}

// Issue 26, point 1: a consumer with only callbacks does not stop
// silently. The broker is killed (SIGKILL: no goodbye on the stream); at the
// give-up on_error gets the final status once, and wait_closed() returns it,
// so that a worker can exit non-zero.
TEST_F(ClientReconnectTest, AGiveUpReachesOnErrorOnceAndWaitClosed) {
  auto options = test_options();
  options.reconnect_max_attempts = 2;
  options.reconnect_max_backoff = 200ms;
  std::mutex mutex;
  std::vector<grpc::Status> errors;
  options.on_error = [&](const grpc::Status& status) {
    std::lock_guard<std::mutex> guard{mutex};
    errors.push_back(status);
  };
  auto client = make_client(options);
  delivery_log log;
  auto fanout = client->subscribe("gu.>", log.handler());
  client::subscribe_options member;
  member.group = "gug";
  auto worker = client->subscribe("guj.>", log.handler(), member);
  ASSERT_TRUE(fanout->wait_subscribed(patience).ok());
  ASSERT_TRUE(worker->wait_subscribed(patience).ok());
  EXPECT_EQ(client->wait_closed(10ms).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  auto address = broker_->address();
  ASSERT_TRUE(broker_->stop(SIGKILL).has_value());
  auto status = client->wait_closed(30s);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("gave up after 2 failed attempts"),
            std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find(address), std::string::npos)
      << status.error_message();
  {
    // wait_closed returns once on_error has had the status.
    std::lock_guard<std::mutex> guard{mutex};
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].error_message(), status.error_message());
  }
  client->close();
  EXPECT_EQ(client->wait_closed().error_message(), status.error_message())
      << "close() after the give-up keeps the final status";
  {
    std::lock_guard<std::mutex> guard{mutex};
    EXPECT_EQ(errors.size(), 1u) << "close() reports nothing more";
  }
  start_broker(address); // TearDown wants a broker that exits cleanly
}

// After close(), wait_closed() returns OK and on_error heard nothing.
TEST_F(ClientReconnectTest, WaitClosedIsOkAfterClose) {
  auto options = test_options();
  int errors = 0;
  options.on_error = [&](const grpc::Status&) {
    ++errors;
  };
  auto client = make_client(options);
  client->close();
  EXPECT_TRUE(client->wait_closed(1s).ok());
  EXPECT_EQ(errors, 0);
}

} // namespace
} // namespace tb::test
