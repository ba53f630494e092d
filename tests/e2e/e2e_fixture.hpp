// The fixture of the end-to-end tests: a real broker process on a free
// loopback port and a client connected to it.

#pragma once

#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "broker_process.hpp"
#include "client/connection.hpp"

namespace tb::test {

/// How long an end-to-end test waits for something that should happen.
inline constexpr std::chrono::milliseconds patience{10000};

/// Waits until `condition` holds, polling every 10 ms, or `timeout` passed;
/// returns whether it holds.
template <class Predicate>
bool eventually(Predicate condition,
                std::chrono::milliseconds timeout = patience) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

/// How long a test waits to be sure that something does not happen.
inline constexpr std::chrono::milliseconds quiet_period{300};

/// Starts a broker per test (with `broker_args()`) and connects to it.
class BrokerTest : public ::testing::Test {
protected:
  /// Extra command-line arguments for the broker; none by default.
  virtual std::vector<std::string> broker_args() {
    return {};
  }

  /// The program that runs the broker; `tinybroker` by default.
  virtual std::string broker_binary() {
    return TINYBROKER_BINARY;
  }

  void SetUp() override {
    broker_ = std::make_unique<broker_process>(broker_args(), broker_binary());
    ASSERT_TRUE(broker_->wait_ready()) << broker_->output();
    conn_ = std::make_unique<client::connection>(broker_->address());
    ASSERT_TRUE(conn_->wait_connected(patience));
  }

  /// Stops the broker the way an operator would and expects a clean exit:
  /// under the sanitizers, a memory error or leak anywhere in the broker's
  /// run makes this exit code non-zero.
  void TearDown() override {
    conn_.reset();
    auto code = broker_->stop(SIGTERM);
    ASSERT_TRUE(code.has_value()) << "the broker did not stop in time";
    EXPECT_EQ(*code, 0) << broker_->output();
  }

  /// Opens a session and subscribes `subscription_id` to `pattern`,
  /// waiting for the Subscribed frame.
  std::unique_ptr<client::session> subscriber(uint64_t subscription_id,
                                              const std::string& pattern) {
    auto session = conn_->open_session();
    subscribe(*session, subscription_id, pattern);
    return session;
  }

  /// Subscribes on an open session and waits for the Subscribed frame.
  static void subscribe(client::session& session, uint64_t subscription_id,
                        const std::string& pattern) {
    ASSERT_TRUE(session.subscribe(subscription_id, pattern));
    auto frame =
        session.wait_for(tinybroker::v1::ServerFrame::kSubscribed, patience);
    ASSERT_TRUE(frame.has_value()) << "no Subscribed frame for " << pattern;
    EXPECT_EQ(frame->subscribed().subscription_id(), subscription_id);
  }

  /// Publishes one message per topic (payload = topic) with the unary call
  /// and expects every one accepted.
  void publish(const std::vector<std::string>& topics) {
    std::vector<client::outgoing_message> batch;
    for (auto& topic : topics)
      batch.push_back({topic, topic, {}, {}});
    std::vector<tinybroker::v1::PublishResult> results;
    auto status = conn_->publish(batch, &results);
    ASSERT_TRUE(status.ok()) << status.error_message();
    for (auto& result : results)
      EXPECT_FALSE(result.has_error()) << result.error().message();
  }

  /// Returns the topics of `deliveries`, in order.
  static std::vector<std::string>
  topics_of(const std::vector<tinybroker::v1::Delivery>& deliveries) {
    std::vector<std::string> result;
    for (auto& d : deliveries)
      result.push_back(d.topic());
    return result;
  }

  /// The broker under test.
  std::unique_ptr<broker_process> broker_;
  /// A client connection to it.
  std::unique_ptr<client::connection> conn_;
};

} // namespace tb::test
