// The unary calls of the completion-queue transport (`[grpc] transport =
// "cq"`): each method's calls are requested on the broker's completion
// queue and served by the same handlers as on the callback API
// (broker_service::serve_*, net/unary_done.hpp). With every method of the
// server on that queue, gRPC starts none of its callback API's threads,
// whose wake-ups on every event cost the transport about a quarter of its
// CPU at 5k msgs/s (docs/performance.md, "Every call on the queue").

#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include <grpcpp/grpcpp.h>

#include "net/session_cq.hpp"
#include "net/unary_done.hpp"

namespace tb {

/// Shared by the calls of one completion queue: once closed (the queue is
/// about to shut down), a call that ends no longer starts an operation on
/// the queue. Each call holds it too, so that one answered after the
/// transport is gone still finds it (closed).
class cq_unary_gate {
public:
  /// Runs `start`, which starts an operation on the queue, under the gate's
  /// lock, and returns true; returns false without running it once closed.
  template <class Start>
  bool pass(Start&& start) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (closed_)
      return false;
    start();
    return true;
  }

  /// Closes the gate; an operation that passed before has started.
  void close() {
    std::lock_guard<std::mutex> guard{mutex_};
    closed_ = true;
  }

private:
  std::mutex mutex_;
  bool closed_ = false;
};

/// One unary method on a completion queue: how gRPC is asked for its next
/// call, and what serves it. Outlives its calls (the transport owns it).
template <class Request, class Reply>
struct cq_unary_method {
  /// The call's answer on the asynchronous API.
  using responder = grpc::ServerAsyncResponseWriter<Reply>;

  /// Asks for the next call into the arguments (the generated async
  /// service's `RequestX` on the queue); `tag` comes back when it arrives.
  std::function<void(grpc::ServerContext*, Request*, responder*, void* tag)>
      request;

  /// Serves one call (a `broker_service::serve_*`).
  std::function<void(const grpc::ServerContextBase&, const Request*, Reply*,
                     unary_done)>
      serve;

  /// The queue's gate (see `cq_unary_gate`), shared with the calls.
  std::shared_ptr<cq_unary_gate> gate;
};

/// One call of a unary method on a completion queue, from its request to
/// the completion of its Finish: on arrival it asks for the next call and
/// hands itself to the method's handler, which ends it through a
/// `unary_done` from any thread. Deletes itself on the polling thread once
/// the Finish completed, or when its call never arrived (the server
/// stopped), or at once when it ends after the queue's gate closed.
template <class Request, class Reply>
class cq_unary_call final : public cq_event {
public:
  /// Waits for the next call of `method`.
  static void listen(const cq_unary_method<Request, Reply>& method) {
    auto* call = new cq_unary_call(method);
    method.request(&call->context_, &call->request_, &call->responder_, call);
  }

  void proceed(bool ok) override {
    if (arrived_ || !ok) { // the Finish completed, or the server stops
      delete this;
      return;
    }
    arrived_ = true;
    listen(method_);
    // Touches nothing of this call after: the answer may already have
    // deleted it.
    method_.serve(context_, &request_, &reply_,
                  [this](const grpc::Status& status) { finish(status); });
  }

private:
  explicit cq_unary_call(const cq_unary_method<Request, Reply>& method)
      : method_(method), gate_(method.gate) {
    // nop
  }

  ~cq_unary_call() = default;

  void finish(const grpc::Status& status) {
    // Not method_'s gate: the answer may come after the transport, and
    // its methods, are gone.
    if (!gate_->pass([&] { responder_.Finish(reply_, status, this); }))
      delete this;
  }

  const cq_unary_method<Request, Reply>& method_; // polling thread only
  std::shared_ptr<cq_unary_gate> gate_;
  grpc::ServerContext context_;
  Request request_;
  Reply reply_;
  grpc::ServerAsyncResponseWriter<Reply> responder_{&context_};
  bool arrived_ = false; // polling thread only
};

} // namespace tb
