// The asynchronous tinybroker C++ client: batched publishing with confirms,
// fan-out and consumer-group subscriptions with callbacks, coalesced
// answers, and reconnect with re-subscribe. See docs/client.md.
//
//   tb::client::async_client client{"127.0.0.1:7400"};
//   auto sub = client.subscribe("orders.>", [](tb::client::delivery d) {
//     std::cout << d.topic() << ": " << d.payload() << "\n";
//   });
//   sub->wait_subscribed(std::chrono::seconds(5));
//   auto confirm = client.publish({"orders.eu.created", "hello"});
//   std::cout << confirm.get().id << "\n";

#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "client/connection.hpp"
#include "client/delivery.hpp"
#include "client/options.hpp"
#include "client/request.hpp"
#include "client/subscription.hpp"

namespace tb::client {

/// One connection to a broker with one Session stream, reopened after a
/// loss. Thread-safe; callbacks run on the client's threads (see
/// docs/client.md, "Threading").
class async_client {
public:
  /// Starts connecting to `address` (`HOST:PORT`) in the background, with
  /// `options.security` (token, TLS) on every stream and call; throws
  /// `security_error` if those settings cannot be used. Several addresses
  /// joined by commas ("10.0.0.1:7400,10.0.0.2:7400") are as the list
  /// constructor's; an empty entry throws `invalid_request`.
  explicit async_client(const std::string& address,
                        client_options options = {});

  /// Starts connecting to one of `addresses` (the nodes of a cluster, or
  /// brokers to fail over between; issue 30): shuffled unless
  /// `options.randomize_addresses` is false, the first reachable one is
  /// used; when its connection is lost the client goes on with the next
  /// reachable one, subscribing again, rejoining its groups and (with
  /// `idempotent`) sending the unconfirmed publishes again with their ids.
  /// See docs/client.md, "Several addresses and failover".
  explicit async_client(std::vector<std::string> addresses,
                        client_options options = {});

  /// Closes (see `close`).
  ~async_client();

  async_client(const async_client&) = delete;
  async_client& operator=(const async_client&) = delete;

  /// Waits until the broker answered on the stream; false on timeout or
  /// once closed.
  bool wait_connected(std::chrono::milliseconds timeout);

  /// The connection's state.
  connection_state state() const;

  /// The address of the broker the client is connected to, or is trying
  /// now (one of those it was given).
  std::string address() const;

  /// Blocks until the client is closed and returns why: OK after `close`;
  /// the status it closed itself with for good otherwise, UNAVAILABLE
  /// "gave up after N failed attempts to reach the broker at ADDRESS" when
  /// reconnecting failed `reconnect_max_attempts` times, followed by ":
  /// CAUSE" when the likely cause can be told (a TLS problem, nothing
  /// listening: `connection::likely_cause`), or a status no
  /// attempt can fix (UNAUTHENTICATED, ...). So a worker that consumes
  /// through callbacks can end with `return client.wait_closed().ok() ? 0 :
  /// 1;` and be restarted by its supervisor. That status also goes to
  /// `on_error` once (or, without one, as a warning line to stderr).
  grpc::Status wait_closed();

  /// As `wait_closed()`, waiting at most `timeout`: DEADLINE_EXCEEDED if
  /// the client is still open then.
  grpc::Status wait_closed(std::chrono::milliseconds timeout);

  /// What the client sent so far.
  client_stats stats() const;

  /// Queues `message` for the next batch; the future gives its id or error.
  std::future<publish_result> publish(outgoing_message message);

  /// Queues `message`; `done` is called once with its id or error.
  void publish(outgoing_message message, publish_callback done);

  /// Sends what is batched now and waits until every publish so far has its
  /// outcome; false if `timeout` passed first.
  bool flush(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// Subscribes to `pattern`: fan-out, or a group membership when
  /// `options.group` is set. `handler` gets each delivery on the callback
  /// thread. Kept across reconnects until it ends.
  std::shared_ptr<subscription> subscribe(const std::string& pattern,
                                          delivery_handler handler,
                                          subscribe_options options = {});

  /// Subscribes to each of `patterns` as `subscribe` does, all with
  /// `handler` and `options`, in SubscribeBatch frames of up to 256: for
  /// many patterns several times cheaper for the broker than a `subscribe`
  /// each. Returns at once, one subscription per pattern in order; wait for
  /// each with `wait_subscribed` (a refused one ends with its own status,
  /// the others stand).
  std::vector<std::shared_ptr<subscription>>
  subscribe_many(const std::vector<std::string>& patterns,
                 delivery_handler handler, subscribe_options options = {});

  /// Sends a request without waiting: the future gives the reply or the
  /// failure (see `reply_result`). Uses the unary Request call on the
  /// client's channel (client/client_request.cpp).
  std::future<reply_result> request(outgoing_message message,
                                    request_options options = {});

  /// Sends a request; `done` is called once with the outcome, on a gRPC
  /// thread (it must not block).
  void request(outgoing_message message, request_options options,
               reply_callback done);

  /// Answers the requests to `pattern` with `handler` (a responder): each
  /// delivery that is a request gets `handler`'s reply; plain messages are
  /// passed over. With `options.group` it is a member of that group: each
  /// request goes to one member, and the reply acks it. Kept across
  /// reconnects as any subscription.
  std::shared_ptr<subscription> serve(const std::string& pattern,
                                      request_handler handler,
                                      subscribe_options options = {});

  /// Creates consumer group `name` with `settings` (unary CreateGroup);
  /// OK if an identical one exists.
  grpc::Status create_group(const std::string& name,
                            const tinybroker::v1::GroupSettings& settings);

  /// The synchronous connection on the same channel, for unary calls.
  connection& unary();

  /// Flushes, half-closes the stream, waits up to `close_timeout` for the
  /// last confirms, ends every subscription and stops the threads. Pending
  /// work that could not finish fails (UNAVAILABLE or CANCELLED). Do not
  /// call it from a callback.
  void close();

private:
  std::shared_ptr<detail::client_core> core_;
};

} // namespace tb::client
