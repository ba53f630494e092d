#include "tools/relay/relay_service.hpp"

#include <string>

namespace tb::relay {

namespace pb = tinybroker::v1;

// -- stream_writer
// -------------------------------------------------------------

void stream_writer::write(std::unique_ptr<pb::ServerFrame> frame) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (reactor_ == nullptr || finished_ || finish_after_writes_)
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

void stream_writer::start_write_locked() {
  // Like the broker's bridge: with frames queued behind this one, gRPC may
  // send it together with the next.
  grpc::WriteOptions options;
  if (!queued_.empty())
    options.set_buffer_hint();
  reactor_->StartWrite(writing_.get(), options);
}

void stream_writer::write_done(bool ok) {
  std::lock_guard<std::mutex> guard{mutex_};
  writing_.reset();
  if (reactor_ == nullptr || finished_)
    return;
  if (!ok) {
    queued_.clear();
    finish_locked(grpc::Status{grpc::StatusCode::CANCELLED,
                               "writing to the client failed"});
    return;
  }
  if (!queued_.empty()) {
    writing_ = std::move(queued_.front());
    queued_.pop_front();
    start_write_locked();
    return;
  }
  if (finish_after_writes_)
    finish_locked(final_status_);
}

void stream_writer::finish(grpc::Status status) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (writing_ != nullptr) {
    finish_after_writes_ = true;
    final_status_ = std::move(status);
    return;
  }
  finish_locked(std::move(status));
}

void stream_writer::finish_locked(grpc::Status status) {
  if (finished_ || reactor_ == nullptr)
    return;
  finished_ = true;
  reactor_->Finish(status);
}

void stream_writer::detach() {
  std::lock_guard<std::mutex> guard{mutex_};
  reactor_ = nullptr;
  queued_.clear();
}

// -- relay_stream
// --------------------------------------------------------------

relay_stream::relay_stream(callback_hub& hub)
    : hub_(hub), writer_(std::make_shared<stream_writer>(this)) {
  StartRead(&reading_);
}

void relay_stream::OnReadDone(bool ok) {
  if (!ok) {
    hub_.remove(writer_.get());
    writer_->finish(grpc::Status::OK);
    return;
  }
  handle(reading_);
  reading_.Clear();
  StartRead(&reading_);
}

void relay_stream::handle(const pb::ClientFrame& frame) {
  if (auto reply = hub_.take(frame, writer_))
    writer_->write(std::move(reply));
}

void relay_stream::OnWriteDone(bool ok) {
  writer_->write_done(ok);
}

void relay_stream::OnDone() {
  hub_.remove(writer_.get());
  writer_->detach();
  delete this;
}

grpc::ServerBidiReactor<pb::ClientFrame, pb::ServerFrame>*
relay_service::Session(grpc::CallbackServerContext* /*context*/) {
  return new relay_stream(hub_);
}

grpc::ServerUnaryReactor*
relay_service::CreateGroup(grpc::CallbackServerContext* context,
                           const pb::CreateGroupRequest* request,
                           pb::GroupInfo* reply) {
  reply->set_name(request->name());
  *reply->mutable_settings() = request->settings();
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor*
relay_service::DeleteGroup(grpc::CallbackServerContext* context,
                           const pb::DeleteGroupRequest* request,
                           pb::DeleteGroupReply* /*reply*/) {
  hub_.drop_group(request->name());
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

} // namespace tb::relay
