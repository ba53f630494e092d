// The tinybroker C++ client: a connection with unary calls, and Session
// streams with a blocking, thread-safe receive queue.
//
//   tb::client::connection conn{"127.0.0.1:7400"};  // + security_options
//   auto session = conn.open_session();
//   session->subscribe(1, "orders.>");
//   session->wait_for(kSubscribed, 5s);
//   conn.publish({{"orders.eu.created", "hello"}});
//   auto frame = session->next(5s);  // a Deliveries frame

#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "client/reach.hpp"
#include "client/request.hpp"
#include "client/security.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::client {

class session;

/// A message to publish.
struct outgoing_message {
  /// The topic.
  std::string topic;
  /// The payload.
  std::string payload;
  /// Optional headers.
  std::map<std::string, std::string> headers;
  /// Optional routing key.
  std::string key;
  /// Time to live, counted from when it becomes deliverable (zero or less:
  /// none): a group drops or dead-letters it once it waited that long for a
  /// delivery, a slow fan-out subscriber's buffer drops it unwritten.
  std::chrono::milliseconds ttl{0};
  /// Deliver it not before this long after its acceptance (zero or less: at
  /// once); at most the broker's limits.max_delay. Do not set together with
  /// `not_before`.
  std::chrono::milliseconds delay{0};
  /// Deliver it not before this time (the epoch, the default: at once; a
  /// time already past: at once).
  std::chrono::system_clock::time_point not_before{};
  /// 0 (default) to 9: among a group's waiting messages, higher first.
  uint32_t priority = 0;
  /// Optional id for de-duplication (at most 128 bytes, any bytes: text or
  /// binary): a second message with the same id on the same topic within
  /// the broker's window is confirmed as a duplicate and routed nowhere
  /// (docs/semantics.md).
  std::string msg_id = {};
};

/// Copies `msg` into its wire form.
void to_proto(const outgoing_message& msg, tinybroker::v1::Message& out);

/// Sets `args`' connection attempt timeout to `connect_attempt_timeout`.
void limit_connect_attempts(grpc::ChannelArguments& args);

/// Makes an insecure channel to `address` (`HOST:PORT`) with `args` plus
/// the client's message size limits and `connect_attempt_timeout`.
std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            grpc::ChannelArguments args = {});

/// Makes a channel to `address` with `security`: TLS when
/// `security.tls()`, and `authorization: Bearer <token>` added to every call
/// and stream on it when a token is set (on TLS and plain channels alike).
/// Throws `security_error` for settings that cannot be used (an unreadable
/// PEM file, a certificate without its key).
std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const security_options& security,
                                            grpc::ChannelArguments args = {});

/// Makes a channel as above that also sends `client_name` (unless empty)
/// in the metadata `tinybroker-client-name` of every call and stream, so
/// that the broker's Stats and log lines name this client. Throws
/// `invalid_request` if the name is longer than 128 bytes, not UTF-8 or
/// holds a control character, and `security_error` as above.
std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const security_options& security,
                                            const std::string& client_name,
                                            grpc::ChannelArguments args = {});

/// A channel to one broker. Thread-safe.
class connection {
public:
  /// Connects (lazily) to `address` (`HOST:PORT`) with `security` (a
  /// token, TLS), naming itself `client_name` (none if empty; see
  /// `make_channel`); throws `security_error` if the security settings
  /// cannot be used, `invalid_request` if the name cannot.
  explicit connection(const std::string& address,
                      const security_options& security = {},
                      const std::string& client_name = {});

  /// Uses `channel` (from `make_channel`).
  explicit connection(std::shared_ptr<grpc::Channel> channel);

  /// Uses `channel`, made by `make_channel` for `address` with `security`:
  /// `explain` and `likely_cause` then probe that address.
  connection(std::shared_ptr<grpc::Channel> channel, const std::string& address,
             const security_options& security);

  /// Publishes a batch with the unary Publish call; fills `results` with one
  /// result per message. A message larger than the broker's
  /// limits.max_message_bytes (asked with Info on the first publish) is not
  /// sent: its result is RESOURCE_EXHAUSTED `message_too_large` "message to
  /// \"TOPIC\" has N bytes (payload, headers and key); the broker at
  /// ADDRESS takes at most M (limits.max_message_bytes); nothing was sent";
  /// the others are. `timeout` bounds both calls. Returns the call's status
  /// (OK when no message was left to send).
  grpc::Status
  publish(const std::vector<outgoing_message>& messages,
          std::vector<tinybroker::v1::PublishResult>* results = nullptr,
          std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// Sends a request and waits for its reply (the unary Request call), at
  /// most `options.timeout` plus a second for the way there and back. The
  /// result's status says what came: a reply (OK), nobody listening
  /// (UNAVAILABLE, reason no_responders, at once), no reply in time
  /// (DEADLINE_EXCEEDED) or a refusal (client/client_request.cpp).
  reply_result request(const outgoing_message& message,
                       const request_options& options = {});

  /// Opens a Session stream; a non-empty `client_name` names it instead
  /// of the connection's name (e.g. one name per worker on one channel).
  std::unique_ptr<session> open_session(const std::string& client_name = {});

  /// Returns `status` with its message naming the likely cause when it is
  /// a failed connection (UNAVAILABLE "failed to connect to all
  /// addresses"): a TLS problem, a plain-text client at a TLS port and the
  /// like (see client/tls_diagnosis.hpp), probing the broker's address at
  /// most once every 10 s; other statuses as they are. `publish` answers
  /// with it.
  grpc::Status explain(grpc::Status status);

  /// Returns the sentence naming the likely cause of a failed connection
  /// whose gRPC message is `grpc_message` (see `diagnose_connect_failure`),
  /// or "" when it cannot be told or the connection was made from a bare
  /// channel; probes the broker's address at most once every 10 s.
  /// `explain` and the `async_client`'s give-up name the cause with it.
  std::string likely_cause(std::string_view grpc_message);

  /// Returns true once the channel is connected, waiting up to `timeout`.
  bool wait_connected(std::chrono::milliseconds timeout);

  /// Returns the address it was made for ("" when made from a bare
  /// channel).
  const std::string& address() const {
    return address_;
  }

  /// Returns the underlying channel, for other stubs (health, reflection).
  std::shared_ptr<grpc::Channel> channel() const {
    return channel_;
  }

  /// Returns the generated stub.
  tinybroker::v1::Broker::Stub& stub() {
    return *stub_;
  }

private:
  // The broker's limits.max_message_bytes (0: none known), asked once.
  std::size_t max_message_bytes(std::chrono::system_clock::time_point deadline);

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<tinybroker::v1::Broker::Stub> stub_;
  // The address and settings, when made from them (for `explain`).
  std::string address_;
  security_options security_;
  // The last diagnosis of `explain`, and when it was made.
  std::mutex explain_mutex_;
  std::string explained_;
  std::chrono::steady_clock::time_point explained_at_;
  // What `max_message_bytes` learnt (nothing: not yet).
  std::mutex limit_mutex_;
  std::optional<std::size_t> max_message_bytes_;
};

} // namespace tb::client

#include "client/session.hpp"
