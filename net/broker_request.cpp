// The unary Request call: the same request/reply as a Session stream's
// Request frame, for a caller without a stream. A publisher actor of the
// pool waits for the reply and completes the call (actors/session/
// session_requests.cpp).

#include <caf/send.hpp>

#include "actors/session/unary_call.hpp"
#include "net/broker_service.hpp"
#include "net/log.hpp"
#include "net/status.hpp"

namespace tb {

void broker_service::serve_request(const grpc::ServerContextBase& ctx,
                                   const tinybroker::v1::Request* req,
                                   tinybroker::v1::Response* reply,
                                   unary_done done) {
  refusal_reporter report{logger_, "Request", ctx.peer()};
  if (shutting_down_ || publishers_.empty()) {
    auto err =
        make_error_info(ec::shutting_down, "the broker is shutting down");
    report(err);
    done(to_grpc_status(err));
    return;
  }
  auto who = auth_.authenticate(ctx);
  if (who.error) {
    report(who.error);
    done(to_grpc_status(who.error));
    return;
  }
  auto call = std::make_shared<unary_request_call>();
  // gRPC owns the request for the call's lifetime; the actor moves the
  // message out of it.
  call->request = const_cast<tinybroker::v1::Request*>(req);
  call->response = reply;
  call->peer = report.peer;
  call->grant = std::move(who.grant);
  sessions_.call_started();
  // The publisher logs its refusals; here the call only ends.
  call->finish = [this, done](const error_info& status) {
    done(to_grpc_status(status));
    sessions_.call_done();
  };
  auto index = next_publisher_++ % publishers_.size();
  caf::anon_send(publishers_[index], unary_req_atom_v, std::move(call));
}

} // namespace tb
