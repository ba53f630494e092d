// How a unary call of the Broker service is answered, whichever gRPC API
// serves it: the handlers in net/broker_service.hpp fill the reply and end
// the call through a `unary_done`, which the callback API's reactor and the
// completion-queue transport's call (net/cq_unary.hpp) each provide.

#pragma once

#include <functional>

#include <grpcpp/grpcpp.h>

namespace tb {

/// Ends a unary call with `status`, once, after the reply was filled (the
/// reply is sent only with an OK status). Callable from any thread.
using unary_done = std::function<void(const grpc::Status& status)>;

/// Returns the `unary_done` that finishes `reactor` (gRPC's callback API).
inline unary_done finish_through(grpc::ServerUnaryReactor* reactor) {
  return [reactor](const grpc::Status& status) {
    reactor->Finish(status);
  };
}

} // namespace tb
