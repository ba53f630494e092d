// Request/reply in the C++ client: the blocking request of `connection`,
// the future and callback requests of `async_client`, and the responder
// helper `serve` with `delivery::reply` (docs/client.md, "Request and
// reply").
//
// Requests use the unary Request call: a caller needs no stream, and the
// broker's answer is the call's status. Replies go on the Session stream
// that carried the request, since only that stream's session may answer it.

#include <memory>

#include "client/async_client.hpp"
#include "client/check.hpp"
#include "client/detail/client_core.hpp"

namespace tb::client {

namespace pb = tinybroker::v1;

namespace {

// The time a request call may take beyond the request's own timeout: the
// broker answers DEADLINE_EXCEEDED itself, this only bounds a lost broker.
constexpr std::chrono::seconds call_slack{1};

// Builds the Request of `message` with `options`.
pb::Request make_request(const outgoing_message& message,
                         const request_options& options) {
  pb::Request req;
  to_proto(message, *req.mutable_message());
  req.set_timeout_ms(
      static_cast<uint32_t>(std::max<int64_t>(0, options.timeout.count())));
  req.set_group(options.group);
  return req;
}

// Turns a finished call into its result.
reply_result to_result(const grpc::Status& status, pb::Response& response) {
  reply_result result;
  result.status = status;
  if (!status.ok())
    return result;
  result.payload = std::move(*response.mutable_payload());
  result.headers.insert(response.headers().begin(), response.headers().end());
  result.message_id = response.message_id();
  return result;
}

// A request in flight on the async stub: what gRPC needs alive until done.
struct async_request {
  grpc::ClientContext context;
  pb::Request request;
  pb::Response response;
  reply_callback done;
};

} // namespace

bool reply_result::no_responders() const {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         status.error_message().rfind("no_responders", 0) == 0;
}

reply_result connection::request(const outgoing_message& message,
                                 const request_options& options) {
  auto req = make_request(message, options);
  if (auto bad = check_strings(req.message(), "request.message"); !bad.ok())
    return reply_result{bad, {}, {}, 0};
  if (auto bad = check_utf8("request.group", req.group()); !bad.ok())
    return reply_result{bad, {}, {}, 0};
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options.timeout +
                       call_slack);
  pb::Response response;
  auto status = stub().Request(&context, req, &response);
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
      status.error_message().rfind("no_responders", 0) != 0)
    status = explain(status);
  return to_result(status, response);
}

std::future<reply_result> async_client::request(outgoing_message message,
                                                request_options options) {
  auto promise = std::make_shared<std::promise<reply_result>>();
  auto result = promise->get_future();
  request(
      std::move(message), std::move(options),
      [promise](const reply_result& outcome) { promise->set_value(outcome); });
  return result;
}

void async_client::request(outgoing_message message, request_options options,
                           reply_callback done) {
  auto call = std::make_shared<async_request>();
  call->request = make_request(message, options);
  call->done = std::move(done);
  auto bad = check_strings(call->request.message(), "request.message");
  if (bad.ok())
    bad = check_utf8("request.group", call->request.group());
  if (!bad.ok()) {
    call->done(reply_result{bad, {}, {}, 0});
    return;
  }
  call->context.set_deadline(std::chrono::system_clock::now() +
                             options.timeout + call_slack);
  auto& stub = core_->unary().stub();
  stub.async()->Request(&call->context, &call->request, &call->response,
                        [call](grpc::Status status) {
                          call->done(to_result(status, call->response));
                        });
}

std::shared_ptr<subscription> async_client::serve(const std::string& pattern,
                                                  request_handler handler,
                                                  subscribe_options options) {
  auto answer = [handler = std::move(handler)](delivery d) {
    if (!d.is_request())
      return; // a plain message on the topic: nothing to answer
    reply_message out;
    try {
      out = handler(d);
    } catch (...) {
      d.nack(); // a group request goes to another attempt
      throw;    // reported through on_error, as any handler's exception
    }
    d.reply(std::move(out.payload), out.headers);
  };
  return subscribe(pattern, std::move(answer), std::move(options));
}

bool delivery::reply(std::string payload,
                     const std::map<std::string, std::string>& headers) {
  if (!is_request() || answered_)
    return false;
  auto core = core_.lock();
  if (!core)
    return false;
  pb::ClientFrame frame;
  auto* out = frame.mutable_reply();
  out->set_reply_handle(message_.reply_handle());
  out->set_payload(std::move(payload));
  for (auto& [name, value] : headers)
    for (auto* text : {&name, &value})
      if (auto bad = check_utf8("reply.headers", *text); !bad.ok())
        throw invalid_request{bad};
  out->mutable_headers()->insert(headers.begin(), headers.end());
  answered_ = true;
  return core->send_reply(generation_, std::move(frame));
}

namespace detail {

bool client_core::send_reply(uint64_t generation, pb::ClientFrame frame) {
  lock guard{mutex_};
  if (stream_ == nullptr || stream_->generation != generation || closing_)
    return false;
  control_.push_back(std::move(frame));
  io_cv_.notify_all();
  return true;
}

} // namespace detail

} // namespace tb::client
