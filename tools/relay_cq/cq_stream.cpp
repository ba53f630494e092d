#include "tools/relay_cq/cq_stream.hpp"

#include <utility>

namespace tb::relay_cq {

namespace pb = tinybroker::v1;

// -- cq_stream: accepting and reading ----------------------------------------

cq_stream::cq_stream(cq_hub& hub, service& svc, grpc::ServerCompletionQueue* cq,
                     cq_gate& gate)
    : hub_(hub), service_(svc), cq_(cq), gate_(gate) {}

void cq_stream::listen(cq_hub& hub, service& svc,
                       grpc::ServerCompletionQueue* cq, cq_gate& gate) {
  auto stream = std::make_shared<cq_stream>(hub, svc, cq, gate);
  std::lock_guard<std::mutex> guard{stream->mutex_};
  stream->self_ = stream;
  stream->pending_ = 1;
  if (!gate.run([&] {
        svc.RequestSession(&stream->context_, &stream->stream_, cq, cq,
                           &stream->request_op_);
      }))
    stream->self_.reset(); // the relay stops: no more calls
}

void cq_stream::on_request(bool ok) {
  if (!ok) { // the relay stops: this stream never started
    std::shared_ptr<cq_stream> last;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      last = op_done_locked();
    }
    release(std::move(last));
    return;
  }
  listen(hub_, service_, cq_, gate_); // the next client's stream
  std::lock_guard<std::mutex> guard{mutex_};
  started_ = true;
  stream_.Read(&reading_, &read_op_); // takes over the request's count
}

void cq_stream::on_read(bool ok) {
  if (!ok) {
    // The client half-closed, cancelled or the relay stops.
    hub_.remove(this);
    std::shared_ptr<cq_stream> last;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      finish_locked(grpc::Status::OK);
      last = op_done_locked();
    }
    release(std::move(last));
    return;
  }
  bool finishing = false;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    finishing = finish_started_ || finish_after_writes_;
  }
  if (!finishing)
    handle(reading_); // without the lock: it may write to this stream
  reading_.Clear();
  std::shared_ptr<cq_stream> last;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!finish_started_ && !finish_after_writes_) {
      ++pending_;
      stream_.Read(&reading_, &read_op_);
    }
    last = op_done_locked();
  }
  release(std::move(last));
}

void cq_stream::handle(const pb::ClientFrame& frame) {
  if (auto reply = hub_.take(frame, shared_from_this()))
    write(std::move(reply));
}

// -- cq_stream: writing and finishing ----------------------------------------

void cq_stream::write(std::unique_ptr<pb::ServerFrame> frame) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (!started_ || finish_started_ || finish_after_writes_)
    return;
  if (writing_ != nullptr) {
    if (queued_.size() >= max_queued_frames) {
      queued_.clear();
      finish_locked(grpc::Status{grpc::StatusCode::RESOURCE_EXHAUSTED,
                                 "the relay holds " +
                                     std::to_string(max_queued_frames) +
                                     " frames for this stream already"});
      return;
    }
    queued_.push_back(std::move(frame));
    return;
  }
  writing_ = std::move(frame);
  start_write_locked();
}

void cq_stream::start_write_locked() {
  // As the callback relay: with frames queued behind this one, gRPC may
  // send it together with the next.
  grpc::WriteOptions options;
  if (!queued_.empty())
    options.set_buffer_hint();
  ++pending_;
  stream_.Write(*writing_, options, &write_op_);
}

void cq_stream::on_write(bool ok) {
  std::shared_ptr<cq_stream> last;
  std::unique_lock<std::mutex> guard{mutex_};
  writing_.reset();
  if (!ok) {
    queued_.clear();
    finish_locked(grpc::Status{grpc::StatusCode::CANCELLED,
                               "writing to the client failed"});
  } else if (!queued_.empty()) {
    writing_ = std::move(queued_.front());
    queued_.pop_front();
    start_write_locked();
  } else if (finish_after_writes_) {
    finish_after_writes_ = false;
    finish_locked(std::move(final_status_));
  }
  last = op_done_locked();
  guard.unlock();
  release(std::move(last));
}

void cq_stream::finish_locked(grpc::Status status) {
  if (finish_started_)
    return;
  if (writing_ != nullptr) {
    // One write at a time: the status follows the frames already queued.
    if (!finish_after_writes_) {
      finish_after_writes_ = true;
      final_status_ = std::move(status);
    }
    return;
  }
  finish_started_ = true;
  ++pending_;
  stream_.Finish(status, &finish_op_);
}

void cq_stream::on_finish(bool /*ok*/) {
  std::shared_ptr<cq_stream> last;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    last = op_done_locked();
  }
  release(std::move(last));
}

std::shared_ptr<cq_stream> cq_stream::op_done_locked() {
  if (--pending_ > 0)
    return nullptr;
  // Nothing pending: no completion names this stream again.
  return std::move(self_);
}

void cq_stream::release(std::shared_ptr<cq_stream> last) {
  // The hub's references go last; a publisher that copied one before drops
  // its write (finish started) and may delete the stream.
  if (last == nullptr)
    return;
  hub_.remove(last.get());
  gate_.leave();
}

} // namespace tb::relay_cq
