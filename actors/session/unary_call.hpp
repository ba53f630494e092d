// A unary Publish call handed from the gRPC service to a publisher actor.

#pragma once

#include <functional>
#include <string>

#include "auth/access_grant.hpp"
#include "routing/error.hpp"

namespace tinybroker::v1 {
class PublishRequest;
class PublishReply;
class Request;
class Response;
} // namespace tinybroker::v1

namespace tb {

/// What every unary call handed to an actor has: completed exactly once,
/// and as UNAVAILABLE if it is dropped without an answer (its actor
/// stopped), so gRPC never waits for it.
struct unary_completion {
  unary_completion() = default;
  unary_completion(const unary_completion&) = delete;
  unary_completion& operator=(const unary_completion&) = delete;

  ~unary_completion() {
    complete(make_error_info(ec::shutting_down, "the broker is stopping"));
  }

  /// Completes the call the first time; later calls do nothing.
  void complete(const error_info& status) {
    if (finish) {
      auto fn = std::move(finish);
      finish = nullptr;
      fn(status);
    }
  }

  /// Completes the call: OK when the code is `ec::none`, else that status.
  std::function<void(const error_info&)> finish;
  /// The client's address, for log lines.
  std::string peer;
  /// What the caller's token allows.
  access_grant grant;
};

/// One unary Publish call in flight. The gRPC service owns `request` and
/// `reply` until the call completes; the publisher actor fills `reply` and
/// calls `complete` once.
struct unary_call : unary_completion {
  /// The request; the actor may move payloads out of it.
  tinybroker::v1::PublishRequest* request = nullptr;
  /// The reply to fill, one result per request message.
  tinybroker::v1::PublishReply* reply = nullptr;
};

/// One unary Request call in flight, completed as `unary_call` is.
struct unary_request_call : unary_completion {
  /// The request; the actor may move its message out.
  tinybroker::v1::Request* request = nullptr;
  /// The response to fill with the reply.
  tinybroker::v1::Response* response = nullptr;
};

} // namespace tb
