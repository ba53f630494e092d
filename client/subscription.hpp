// A subscription of the asynchronous client: fan-out or consumer-group
// membership, kept across reconnects until it ends.

#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "client/delivery.hpp"

namespace tb::client {

/// How to subscribe; the defaults make a fan-out subscription.
struct subscribe_options {
  /// The consumer group to join; empty for fan-out.
  std::string group;
  /// Group members: the most unacked deliveries held (0 = broker default).
  uint32_t max_in_flight = 0;
  /// Group members: labels the group's policy may read (docs/extending.md).
  std::vector<std::string> tags;
  /// Called once when the subscription ends for good, on the callback
  /// thread: OK after `unsubscribe` or `close`, else the refusal
  /// (INVALID_ARGUMENT for a bad pattern, FAILED_PRECONDITION for a group
  /// pattern conflict, ...), ABORTED when the broker ended it (the group
  /// was deleted), UNAVAILABLE when the client gave up reconnecting.
  std::function<void(const grpc::Status&)> on_end;
  /// Fan-out: called with the number of messages the broker dropped
  /// because this subscriber was too slow.
  std::function<void(uint64_t)> on_dropped;
  /// Runs `handler` on the stream's reader thread as each frame is read,
  /// instead of on the callback thread: no hand-over between threads, so a
  /// delivery reaches it sooner. The handler must not block: while it runs
  /// the stream reads nothing else, not even a publish's confirm, so
  /// waiting there for a confirm never ends. `on_end` and `on_dropped`
  /// stay on the callback thread.
  bool on_reader_thread = false;
};

/// A handle on one subscription. Thread-safe.
class subscription {
public:
  /// Made by `async_client::subscribe`.
  subscription(uint64_t id, std::string pattern, delivery_handler handler,
               subscribe_options options,
               std::weak_ptr<detail::client_core> core);

  /// The client-chosen subscription id.
  uint64_t id() const {
    return id_;
  }

  /// The pattern.
  const std::string& pattern() const {
    return pattern_;
  }

  /// The options it was made with.
  const subscribe_options& options() const {
    return options_;
  }

  /// Waits until the broker confirmed the subscription on the current
  /// connection (OK), refused or ended it (that status), or `timeout`
  /// passed (DEADLINE_EXCEEDED).
  grpc::Status wait_subscribed(std::chrono::milliseconds timeout);

  /// True until the subscription ended.
  bool active() const;

  /// How often the broker confirmed it (1 + the reconnects it survived).
  uint64_t times_subscribed() const;

  /// Ends the subscription: no more callbacks; group deliveries not yet
  /// handed to the callback are nacked so they move on at once.
  void unsubscribe();

private:
  friend class detail::client_core;

  // Called by the client core.
  void set_subscribed(bool subscribed);
  bool end(const grpc::Status& status);
  void deliver(delivery d);

  const uint64_t id_;
  const std::string pattern_;
  const delivery_handler handler_;
  const subscribe_options options_;
  const std::weak_ptr<detail::client_core> core_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool subscribed_ = false;
  bool ended_ = false;
  uint64_t times_subscribed_ = 0;
  grpc::Status end_status_;
};

} // namespace tb::client
