// Helpers of the end-to-end tests of the asynchronous client: a fixture
// with a broker and client options for tests, and a thread-safe record of
// what callbacks received.

#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/async_client.hpp"
#include "e2e_fixture.hpp"

namespace tb::test {

/// What a subscription's callbacks received, safe to read from the test.
class delivery_log {
public:
  /// A delivery as recorded.
  struct entry {
    /// Its topic.
    std::string topic;
    /// Its payload.
    std::string payload;
    /// Its attempt (0 for fan-out).
    uint32_t attempt = 0;
  };

  /// Returns a handler that records each delivery, then passes it to
  /// `answer` (which may ack it, keep it, ...).
  client::delivery_handler
  handler(std::function<void(client::delivery&)> answer = {}) {
    return [this, answer](client::delivery d) {
      {
        std::lock_guard<std::mutex> guard{mutex_};
        entries_.push_back({d.topic(), d.payload(), d.attempt()});
        cv_.notify_all();
      }
      if (answer)
        answer(d);
    };
  }

  /// Returns an on_end callback that records the status.
  std::function<void(const grpc::Status&)> on_end() {
    return [this](const grpc::Status& status) {
      std::lock_guard<std::mutex> guard{mutex_};
      ends_.push_back(status);
      cv_.notify_all();
    };
  }

  /// Waits until at least `count` deliveries arrived; returns them all.
  std::vector<entry> wait_for(std::size_t count,
                              std::chrono::milliseconds timeout = patience) {
    std::unique_lock<std::mutex> guard{mutex_};
    cv_.wait_for(guard, timeout, [&] { return entries_.size() >= count; });
    return entries_;
  }

  /// Waits until the subscription ended; returns its status, or nothing.
  std::optional<grpc::Status>
  wait_end(std::chrono::milliseconds timeout = patience) {
    std::unique_lock<std::mutex> guard{mutex_};
    if (!cv_.wait_for(guard, timeout, [&] { return !ends_.empty(); }))
      return std::nullopt;
    return ends_.front();
  }

  /// The payloads received so far, in order.
  std::vector<std::string> payloads() {
    std::lock_guard<std::mutex> guard{mutex_};
    std::vector<std::string> result;
    for (auto& e : entries_)
      result.push_back(e.payload);
    return result;
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<entry> entries_;
  std::vector<grpc::Status> ends_;
};

/// A fan-out subscription and an acking member of `group`, both on
/// `pattern`, made through one client; the constructor waits until both are
/// confirmed.
struct subscriber_and_worker {
  /// What the fan-out subscription received.
  delivery_log fanout;
  /// What the group member received (each acked).
  delivery_log worker;
  /// The fan-out subscription.
  std::shared_ptr<client::subscription> sub;
  /// The group membership.
  std::shared_ptr<client::subscription> member;

  subscriber_and_worker(client::async_client& client,
                        const std::string& pattern, const std::string& group) {
    sub = client.subscribe(pattern, fanout.handler());
    client::subscribe_options join;
    join.group = group;
    member = client.subscribe(
        pattern, worker.handler([](client::delivery& d) { d.ack(); }), join);
    EXPECT_TRUE(sub->wait_subscribed(patience).ok());
    EXPECT_TRUE(member->wait_subscribed(patience).ok());
  }
};

/// A broker per test and an asynchronous client factory.
class AsyncClientTest : public BrokerTest {
protected:
  /// Options for tests: reconnect quickly.
  static client::client_options test_options() {
    client::client_options options;
    options.reconnect_initial_backoff = std::chrono::milliseconds(50);
    options.reconnect_max_backoff = std::chrono::milliseconds(500);
    return options;
  }

  /// Returns a connected client with `options`.
  std::unique_ptr<client::async_client>
  make_client(client::client_options options = test_options()) {
    auto result = std::make_unique<client::async_client>(broker_->address(),
                                                         std::move(options));
    EXPECT_TRUE(result->wait_connected(patience));
    return result;
  }

  /// Returns group `name` as listed, with its counters.
  tinybroker::v1::GroupInfo group_info(const std::string& name) {
    tinybroker::v1::ListGroupsReply reply;
    grpc::ClientContext ctx;
    auto status = conn_->stub().ListGroups(&ctx, {}, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    for (auto& group : reply.groups())
      if (group.name() == name)
        return group;
    return {};
  }
};

} // namespace tb::test
