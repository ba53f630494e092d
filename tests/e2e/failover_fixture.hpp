// The fixture of the failover tests (issue 30, point 5): two independent
// single-node brokers on loopback, A and B, for clients given both
// addresses; a test kills A (SIGKILL, or SIGSTOP first) and watches the
// clients go on with B.

#pragma once

#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "broker_process.hpp"
#include "client/async_client.hpp"
#include "e2e_fixture.hpp"

namespace tb::test {

/// Brokers A and B, and clients for them.
class FailoverTest : public ::testing::Test {
protected:
  void SetUp() override {
    a_ = std::make_unique<broker_process>();
    b_ = std::make_unique<broker_process>();
    ASSERT_TRUE(a_->wait_ready()) << a_->output();
    ASSERT_TRUE(b_->wait_ready()) << b_->output();
  }

  /// Stops the brokers still running, expecting clean exits.
  void TearDown() override {
    for (auto* broker : {a_.get(), b_.get()}) {
      if (broker == nullptr)
        continue;
      auto code = broker->stop(SIGTERM);
      ASSERT_TRUE(code.has_value()) << "a broker did not stop in time";
      EXPECT_EQ(*code, 0) << broker->output();
    }
  }

  /// Kills broker A with SIGKILL (a node's crash) and waits for its end.
  void kill_a() {
    ASSERT_TRUE(a_->stop(SIGKILL).has_value());
    a_.reset();
  }

  /// Options for tests: reconnect quickly, try the addresses in order.
  static client::client_options failover_options() {
    client::client_options options;
    options.reconnect_initial_backoff = std::chrono::milliseconds(50);
    options.reconnect_max_backoff = std::chrono::milliseconds(500);
    options.randomize_addresses = false;
    return options;
  }

  /// Returns a client given [A, B] with `options`, connected.
  std::unique_ptr<client::async_client>
  both(client::client_options options = failover_options()) {
    auto result = std::make_unique<client::async_client>(
        std::vector<std::string>{a_->address(), b_->address()},
        std::move(options));
    EXPECT_TRUE(result->wait_connected(patience));
    return result;
  }

  /// Returns a client of `address` alone, connected.
  static std::unique_ptr<client::async_client>
  only(const std::string& address) {
    auto result =
        std::make_unique<client::async_client>(address, failover_options());
    EXPECT_TRUE(result->wait_connected(patience));
    return result;
  }

  std::unique_ptr<broker_process> a_;
  std::unique_ptr<broker_process> b_;
};

} // namespace tb::test
