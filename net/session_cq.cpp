#include "net/session_cq.hpp"

#include <string>
#include <utility>

#include "net/broker_service.hpp"
#include "net/log.hpp"
#include "net/session_bridge.hpp"
#include "net/session_open.hpp"
#include "net/session_reactor.hpp"
#include "net/status.hpp"
#include "net/tsan.hpp"

namespace tb {

cq_session::cq_session(broker_service& service, cq_session_source& source,
                       grpc::ServerCompletionQueue* cq)
    : service_(service), source_(source), cq_(cq) {
  source_.created();
}

cq_session::~cq_session() {
  source_.deleted();
}

void cq_session::event::proceed(bool ok) {
  tsan_acquire(owner_); // after the call that started the operation
  (owner_->*handler_)(ok);
}

void cq_session::listen(broker_service& service, cq_session_source& source,
                        grpc::ServerCompletionQueue* cq) {
  auto* session = new cq_session(service, source, cq);
  // The done notification comes only for a call that arrived (on_request
  // with ok), and then always, last or not.
  session->context_.AsyncNotifyWhenDone(&session->done_ev_);
  session->pending_ = 1;
  source.request_session(&session->context_, &session->stream_, cq,
                         &session->request_ev_);
}

void cq_session::on_request(bool ok) {
  if (!ok) { // the server stops: this stream never started
    op_done();
    return;
  }
  ++pending_;                     // the done notification is due now
  listen(service_, source_, cq_); // the next client's stream
  auth_outcome who;
  std::string client_name;
  if (auto err = service_.admit_session(context_, who, client_name)) {
    finish(to_grpc_status(err));
  } else {
    auto parts = service_.stream_parts();
    registry_ = parts.registry;
    bridge_ =
        make_session_bridge(this, context_.peer(), who, std::move(client_name));
    if (auto refusal = open_session(parts, bridge_, who.grant))
      finish(to_grpc_status(refusal));
  }
  op_done(); // the request
}

void cq_session::start_read(grpc::ByteBuffer* bytes) {
  ++pending_;
  tsan_release(this); // see net/tsan.hpp; acquired in proceed()
  stream_.Read(bytes, &read_ev_);
}

void cq_session::start_write(const grpc::ByteBuffer* bytes,
                             grpc::WriteOptions options) {
  ++pending_;
  tsan_release(this);
  stream_.Write(*bytes, options, &write_ev_);
}

void cq_session::finish(const grpc::Status& status) {
  ++pending_;
  tsan_release(this);
  {
    std::lock_guard<std::mutex> guard{hold_mutex_};
    finish_started_ = true;
    if (holding_)
      hold_alarm_.Cancel(); // the call ended before: the wait is over
  }
  stream_.Finish(status, &finish_ev_);
}

bool cq_session::arm_hold() {
  std::lock_guard<std::mutex> guard{hold_mutex_};
  if (finish_started_ || hold_ended_)
    return false;
  holding_ = true;
  ++pending_;
  // Never fires by itself: `finish` or `release_held` cancels it.
  hold_alarm_.Set(cq_, gpr_inf_future(GPR_CLOCK_MONOTONIC), &hold_ev_);
  return true;
}

void cq_session::cancel_hold() {
  std::lock_guard<std::mutex> guard{hold_mutex_};
  if (holding_)
    hold_alarm_.Cancel();
}

void cq_session::on_read(bool ok) {
  if (!ok && !call_done_) {
    // The client half-closed, or cancelled (or the connection broke). gRPC
    // fails the read before it reports the cancel, usually in the same
    // round of its work but not always (in a loaded AddressSanitizer run
    // the done notification came rounds later): wait for it up to
    // `read_end_grace` before telling the bridge, as the callback form
    // tells it (session_reactor::OnReadDone). The done notification cuts
    // the wait short; a half-close waits it out, as a half-closed call has
    // no done notification before the broker finishes it.
    ++pending_;
    read_end_waiting_ = true;
    read_end_alarm_.Set(cq_,
                        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                     gpr_time_from_millis(
                                         read_end_grace.count(), GPR_TIMESPAN)),
                        &read_end_ev_);
  } else {
    bridge_->on_read_done(ok, !ok && context_.IsCancelled());
  }
  op_done(); // the read
}

void cq_session::on_read_end(bool) {
  read_end_waiting_ = false;
  // IsCancelled is valid once the done notification came (gRPC's rule for
  // the asynchronous API); before, the client half-closed.
  bridge_->on_read_done(false, call_done_ && context_.IsCancelled());
  op_done(); // the alarm
}

void cq_session::on_write(bool ok) {
  bridge_->on_write_done(ok);
  op_done();
}

void cq_session::on_finish(bool) {
  op_done();
}

void cq_session::on_call_done(bool) {
  call_done_ = true;
  if (read_end_waiting_)
    read_end_alarm_.Cancel(); // on_read_end runs next, knowing the cancel
  else if (bridge_ != nullptr && context_.IsCancelled())
    bridge_->on_cancel_known(); // later than the grace, or a read pending
  op_done();
}

void cq_session::on_hold_end(bool) {
  {
    std::lock_guard<std::mutex> guard{hold_mutex_};
    holding_ = false;
    hold_ended_ = true;
  }
  auto& source = source_;
  source.forget(this);
  op_done(); // the alarm; may detach the bridge and delete this
  source.ended();
}

bool cq_session::wait_for_finish() {
  // The call is over (its done notification was pending until now). If the
  // bridge has not finished the stream, its session actor still has frames
  // to route: let it, as the callback API does (see the class).
  return source_.hold(this);
}

void cq_session::op_done() {
  if (pending_.fetch_sub(1) != 1)
    return;
  if (bridge_ != nullptr && !detached_) {
    if (wait_for_finish())
      return; // back here when the wait ends
    // Nothing is pending and the call is done. Detaching the bridge takes
    // its lock, so an operation started before it (a late write of the
    // session actor) is counted by now; after it, none starts.
    detached_ = true;
    bridge_->on_done();
    registry_->remove(bridge_);
    if (pending_.load() != 0)
      return; // its completion comes back here
  }
  delete this;
}

// -- cq_session_source --------------------------------------------------------

bool cq_session_source::hold(cq_session* session) {
  std::lock_guard<std::mutex> guard{held_mutex_};
  if (releasing_ || !session->arm_hold())
    return false;
  held_.insert(session);
  return true;
}

void cq_session_source::forget(cq_session* session) {
  std::lock_guard<std::mutex> guard{held_mutex_};
  held_.erase(session);
  ++ending_;
}

void cq_session_source::ended() {
  std::lock_guard<std::mutex> guard{held_mutex_};
  --ending_;
  if (held_.empty() && ending_ == 0)
    held_gone_.notify_all();
}

void cq_session_source::created() {
  std::lock_guard<std::mutex> guard{held_mutex_};
  ++live_;
}

void cq_session_source::deleted() {
  std::lock_guard<std::mutex> guard{held_mutex_};
  if (--live_ == 0)
    held_gone_.notify_all();
}

void cq_session_source::release_held(std::chrono::milliseconds patience) {
  std::unique_lock<std::mutex> guard{held_mutex_};
  releasing_ = true;
  // Each comes back on the polling thread, which forgets it (under this
  // lock, so none is deleted while this loop runs) and detaches its bridge.
  for (auto* session : held_)
    session->cancel_hold();
  if (!held_gone_.wait_for(guard, patience, [this] {
        return held_.empty() && ending_ == 0 && live_ == 0;
      }))
    log::warn("Session streams still open when the completion queue stops",
              {{"streams", live_}});
}

} // namespace tb
