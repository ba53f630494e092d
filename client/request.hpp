// Request/reply in the C++ client: the types of `connection::request`,
// `async_client::request` and `async_client::serve` (docs/client.md,
// "Request and reply").

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <grpcpp/grpcpp.h>

namespace tb::client {

class delivery;

/// How a request is sent.
struct request_options {
  /// How long to wait for the reply (the broker's default is 5 s; at most
  /// 600 s).
  std::chrono::milliseconds timeout = std::chrono::seconds(5);
  /// A consumer group whose pattern matches the topic: the request is one
  /// delivery of it; empty: every fan-out subscriber gets it and the first
  /// reply wins.
  std::string group;
};

/// The outcome of a request.
struct reply_result {
  /// OK with the reply; UNAVAILABLE "no_responders: ..." when nobody
  /// listened (at once); DEADLINE_EXCEEDED when no reply came in time; or
  /// the refusal (INVALID_ARGUMENT, PERMISSION_DENIED, RESOURCE_EXHAUSTED).
  grpc::Status status;
  /// The reply's payload.
  std::string payload;
  /// The reply's headers.
  std::map<std::string, std::string> headers;
  /// The broker's id of the request message.
  uint64_t message_id = 0;

  /// Returns true when a reply came.
  bool ok() const {
    return status.ok();
  }

  /// Returns true when the broker answered NO_RESPONDERS.
  bool no_responders() const;
};

/// Called once with a request's outcome (on a gRPC thread: do not block).
using reply_callback = std::function<void(const reply_result&)>;

/// What a responder answers.
struct reply_message {
  /// The payload.
  std::string payload;
  /// Optional headers.
  std::map<std::string, std::string> headers = {};
};

/// Answers one request delivered to `async_client::serve`; runs on the
/// client's callback thread. A handler that throws sends no reply (a group
/// request is then nacked and redelivered; the caller may time out).
using request_handler = std::function<reply_message(const delivery&)>;

} // namespace tb::client
