#include "net/session_bridge.hpp"

#include <caf/send.hpp>

#include "net/session_reactor.hpp"
#include "net/status.hpp"
#include "net/tsan.hpp"
#include "tinybroker.pb.h"

namespace tb {

session_bridge::session_bridge(session_reactor* reactor, std::size_t max_unread)
    : reactor_(reactor), max_unread_(std::max<std::size_t>(max_unread, 1)) {
  // nop
}

void session_bridge::start(session_actor actor) {
  std::lock_guard<std::mutex> guard{mutex_};
  actor_ = std::move(actor);
  start_read_locked();
}

void session_bridge::start_read_locked() {
  reading_ = std::make_shared<tinybroker::v1::ClientFrame>();
  tsan_release(reactor_);
  reactor_->StartRead(reading_.get());
}

bool session_bridge::ready_to_write() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (reactor_ == nullptr || finished_ || finish_after_write_)
    return false;
  if (writing_) {
    write_wanted_ = true;
    return false;
  }
  return true;
}

void session_bridge::write(std::unique_ptr<tinybroker::v1::ServerFrame> frame) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (reactor_ == nullptr || finished_ || writing_)
    return;
  writing_ = std::move(frame);
  tsan_release(reactor_);
  reactor_->StartWrite(writing_.get());
}

void session_bridge::frame_consumed() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (unread_ > 0)
    --unread_;
  if (read_paused_ && unread_ < max_unread_ && !read_ended_ && !finished_ &&
      reactor_ != nullptr) {
    read_paused_ = false;
    start_read_locked();
  }
}

void session_bridge::finish(ec code, const std::string& text) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto status = to_grpc_status(code, text);
  if (writing_) {
    if (!finish_after_write_)
      finish_after_write_ = status;
    return;
  }
  finish_locked(status);
}

void session_bridge::finish_locked(const grpc::Status& status) {
  if (finished_ || reactor_ == nullptr)
    return;
  finished_ = true;
  tsan_release(reactor_);
  reactor_->Finish(status);
}

void session_bridge::on_read_done(bool ok) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (!ok) {
    read_ended_ = true;
    reading_.reset();
    caf::anon_send(actor_, closed_atom_v);
    return;
  }
  ++unread_;
  caf::anon_send(actor_, frame_atom_v, std::move(reading_));
  if (unread_ < max_unread_ && !finished_)
    start_read_locked();
  else
    read_paused_ = true;
}

void session_bridge::on_write_done(bool ok) {
  std::lock_guard<std::mutex> guard{mutex_};
  writing_.reset();
  if (!ok) {
    finish_locked(grpc::Status{grpc::StatusCode::CANCELLED,
                               "writing to the client failed"});
    return;
  }
  if (finish_after_write_) {
    finish_locked(*finish_after_write_);
    return;
  }
  if (write_wanted_) {
    write_wanted_ = false;
    caf::anon_send(actor_, writable_atom_v);
  }
}

void session_bridge::on_done() {
  std::lock_guard<std::mutex> guard{mutex_};
  reactor_ = nullptr;
  finished_ = true;
  reading_.reset();
  writing_.reset();
  if (actor_)
    caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
}

} // namespace tb
