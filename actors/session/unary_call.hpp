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

/// One unary Publish call in flight.
///
/// The gRPC service owns `request` and `reply` until the call completes; the
/// publisher actor fills `reply` and calls `complete` once. A call dropped
/// without an answer (its actor stopped) completes as UNAVAILABLE, so gRPC
/// never waits for it.
struct unary_call {
  unary_call() = default;
  unary_call(const unary_call&) = delete;
  unary_call& operator=(const unary_call&) = delete;

  ~unary_call() {
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

  /// The request; the actor may move payloads out of it.
  tinybroker::v1::PublishRequest* request = nullptr;
  /// The reply to fill, one result per request message.
  tinybroker::v1::PublishReply* reply = nullptr;
  /// Completes the call: OK when the code is `ec::none`, else that status.
  std::function<void(const error_info&)> finish;
  /// The client's address, for log lines.
  std::string peer;
  /// What the caller's token allows.
  access_grant grant;
};

/// One unary Request call in flight; as `unary_call`, completed once, and
/// as UNAVAILABLE if its actor drops it.
struct unary_request_call {
  unary_request_call() = default;
  unary_request_call(const unary_request_call&) = delete;
  unary_request_call& operator=(const unary_request_call&) = delete;

  ~unary_request_call() {
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

  /// The request; the actor may move its message out.
  tinybroker::v1::Request* request = nullptr;
  /// The response to fill with the reply.
  tinybroker::v1::Response* response = nullptr;
  /// Completes the call: OK when the code is `ec::none`, else that status.
  std::function<void(const error_info&)> finish;
  /// The client's address, for log lines.
  std::string peer;
  /// What the caller's token allows.
  access_grant grant;
};

} // namespace tb
