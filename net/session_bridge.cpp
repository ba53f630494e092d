#include "net/session_bridge.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include <caf/send.hpp>
#include <google/protobuf/arena.h>
#include <grpcpp/impl/codegen/proto_utils.h>

#include "actors/scheduler/caller_runs.hpp"
#include "net/log.hpp"
#include "net/status.hpp"
#include "net/tsan.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// The end reason of a stream the broker ends with `code`.
const char* end_reason_of(ec code) {
  switch (code) {
  case ec::none:
    return "client_closed"; // the session drained after the client closed
  case ec::shutting_down:
    return "broker_shutdown";
  default:
    return "error";
  }
}

// A client frame and the arena it is parsed onto: its messages, topics,
// payloads and ids are bump-allocated in a few blocks and freed at once when
// the last holder lets go, instead of one heap allocation and free each.
struct arena_frame {
  explicit arena_frame(const google::protobuf::ArenaOptions& options)
      : arena(options) {}
  google::protobuf::Arena arena;
};

// The largest first block of a frame's arena; a larger frame adds blocks.
constexpr std::size_t max_first_block = std::size_t{4} << 20;

// Returns an empty frame on an arena whose first block holds a frame of
// `wire_bytes` parsed (small messages take about three times their wire
// size as objects).
client_frame_ptr make_arena_frame(std::size_t wire_bytes) {
  google::protobuf::ArenaOptions options;
  options.start_block_size =
      std::clamp<std::size_t>(3 * wire_bytes + 1024, 1024, max_first_block);
  options.max_block_size = max_first_block;
  auto holder = std::make_shared<arena_frame>(options);
  auto* frame =
      google::protobuf::Arena::CreateMessage<pb::ClientFrame>(&holder->arena);
  // Shares the holder's count: the arena lives as long as the frame.
  return client_frame_ptr{std::move(holder), frame};
}

} // namespace

session_bridge::session_bridge(session_stream* reactor, std::size_t max_unread,
                               std::string peer, std::string credential,
                               std::string token, std::string client_name)
    : reactor_(reactor), peer_(std::move(peer)),
      credential_(std::move(credential)), token_(std::move(token)),
      client_name_(std::move(client_name)),
      max_unread_(std::max<std::size_t>(max_unread, 1)) {
  // nop
}

void session_bridge::set_max_frame_bytes(std::size_t bytes) {
  std::lock_guard<std::mutex> guard{mutex_};
  max_frame_bytes_ = bytes;
}

void session_bridge::start(session_actor actor) {
  std::lock_guard<std::mutex> guard{mutex_};
  system_ = &actor->home_system();
  actor_ = std::move(actor);
  start_read_locked();
}

session_actor session_bridge::actor() {
  std::lock_guard<std::mutex> guard{mutex_};
  return actor_;
}

void session_bridge::start_read_locked() {
  reading_.Clear();
  tsan_release(reactor_);
  reactor_->start_read(&reading_);
}

bool session_bridge::ready_to_write() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (reactor_ == nullptr || finished_ || finish_after_write_)
    return false;
  if (write_pending_) {
    write_wanted_ = true;
    return false;
  }
  return true;
}

bool session_bridge::can_queue() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (reactor_ == nullptr || finished_ || finish_after_write_)
    return false;
  if (queued_.size() >= max_queued_frames) {
    write_wanted_ = true;
    return false;
  }
  return true;
}

void session_bridge::write(std::unique_ptr<tinybroker::v1::ServerFrame> frame) {
  // Serialize outside the lock: the reactor's callbacks need it meanwhile.
  grpc::ByteBuffer bytes;
  bool own_buffer = false;
  auto serialized = grpc::SerializationTraits<pb::ServerFrame>::Serialize(
      *frame, &bytes, &own_buffer);
  frame.reset();
  std::lock_guard<std::mutex> guard{mutex_};
  if (reactor_ == nullptr || finished_ || finish_after_write_)
    return;
  if (!serialized.ok()) {
    log::error("a server frame does not serialize",
               {{"peer", peer_}, {"error", serialized.error_message()}});
    finish_locked(grpc::Status{grpc::StatusCode::INTERNAL,
                               "the broker could not serialize a frame"},
                  "internal");
    return;
  }
  if (write_pending_) {
    queued_.push_back(std::move(bytes));
    return;
  }
  start_write_locked(bytes);
}

void session_bridge::start_write_locked(grpc::ByteBuffer& bytes) {
  writing_.Swap(&bytes);
  write_pending_ = true;
  // With more frames queued behind this one, gRPC may hold it back and send
  // it together with the next: one socket write for a burst of answers.
  grpc::WriteOptions options;
  if (!queued_.empty())
    options.set_buffer_hint();
  tsan_release(reactor_);
  reactor_->start_write(&writing_, options);
}

bool session_bridge::may_read_locked() const {
  return unread_ < max_unread_ && unread_bytes_ < max_unread_bytes;
}

void session_bridge::frame_consumed() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (unread_ > 0)
    --unread_;
  if (!unread_sizes_.empty()) {
    // Frames are released in about the order they were read; the sum is
    // exact once all are released.
    unread_bytes_ -= std::min(unread_bytes_, unread_sizes_.front());
    unread_sizes_.pop_front();
  }
  if (read_paused_ && may_read_locked() && !read_ended_ && !finished_ &&
      reactor_ != nullptr) {
    read_paused_ = false;
    start_read_locked();
  }
}

void session_bridge::finish(ec code, const std::string& text) {
  std::lock_guard<std::mutex> guard{mutex_};
  finish_or_defer_locked(to_grpc_status(code, text), end_reason_of(code));
}

void session_bridge::revoke(const std::string& text) {
  std::lock_guard<std::mutex> guard{mutex_};
  finish_or_defer_locked(to_grpc_status(ec::unauthenticated, text),
                         "token_revoked");
}

std::string session_bridge::end_reason() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return ended_;
}

void session_bridge::finish_or_defer_locked(const grpc::Status& status,
                                            const char* reason) {
  if (write_pending_) {
    if (!finish_after_write_) {
      finish_after_write_ = status;
      if (ended_.empty() && !finished_ && reactor_ != nullptr)
        ended_ = reason;
    }
    return;
  }
  finish_locked(status, reason);
}

void session_bridge::finish_locked(const grpc::Status& status,
                                   const char* reason) {
  if (finished_ || reactor_ == nullptr)
    return;
  if (ended_.empty())
    ended_ = reason;
  finished_ = true;
  tsan_release(reactor_);
  reactor_->finish(status);
}

void session_bridge::on_read_done(bool ok, bool cancelled) {
  // No read is outstanding and none starts before this callback takes the
  // lock (`read_paused_` is false), so `reading_` is this thread's alone.
  client_frame_ptr frame;
  grpc::Status parsed;
  std::size_t size = 0;
  if (ok) {
    size = reading_.Length();
    frame = make_arena_frame(size);
    parsed = parse_request(reading_, *frame);
    if (!parsed.ok())
      frame.reset();
    reading_.Clear();
  }
  if (hand_over(ok, cancelled, std::move(frame), parsed, size))
    read_next();
}

bool session_bridge::hand_over(bool ok, bool cancelled, client_frame_ptr frame,
                               const grpc::Status& parsed, std::size_t size) {
  // This gRPC thread runs the session actor (and the actors it sends to)
  // once the lock below is released, instead of waking a worker for it.
  // `system_` was set before the first read started.
  caller_runs runner{system_};
  std::lock_guard<std::mutex> guard{mutex_};
  if (!ok) {
    read_ended_ = true;
    if (cancelled && ended_.empty())
      ended_ = "client_cancelled"; // before the session drains and finishes
    caf::anon_send(actor_, closed_atom_v);
    return false;
  }
  if (size > max_frame_bytes_) {
    // Issue 26: gRPC reads frames up to a quarter beyond the frame limit
    // (net/grpc_settings.hpp), so that one just over it is refused here,
    // naming the limit, rather than by gRPC's own check, which ends the
    // stream in a way the broker cannot tell from the client's close.
    log::warn(
        "client frame over the frame limit; ending the stream with "
        "RESOURCE_EXHAUSTED",
        {{"peer", peer_}, {"bytes", size}, {"limit_bytes", max_frame_bytes_}});
    read_ended_ = true;
    finish_or_defer_locked(
        grpc::Status{grpc::StatusCode::RESOURCE_EXHAUSTED,
                     "the frame has " + std::to_string(size) +
                         " bytes; the broker reads frames of up to " +
                         std::to_string(max_frame_bytes_) +
                         " bytes (it follows limits.max_message_bytes and "
                         "limits.max_publish_batch); nothing of it was "
                         "routed"},
        "frame_too_large");
    return false;
  }
  if (!frame) {
    // Spec 7: a malformed frame ends the stream, with a status saying why.
    log::warn("malformed client frame; ending the stream with "
              "INVALID_ARGUMENT",
              {{"peer", peer_}, {"error", parsed.error_message()}});
    read_ended_ = true;
    finish_or_defer_locked(parsed, "malformed_frame");
    return false;
  }
  ++unread_;
  unread_bytes_ += size;
  unread_sizes_.push_back(size);
  caf::anon_send(actor_, frame_atom_v, std::move(frame));
  return true;
}

void session_bridge::read_next() {
  // The next read starts once the actors ran (`hand_over`'s runner): a read
  // makes gRPC announce the stream's window to the client, and started
  // after the subscribers' writes that announcement goes out with them, in
  // one send, instead of in one of its own just before them. Between the
  // two no read is outstanding and `read_paused_` is false, so no other path
  // starts one.
  std::lock_guard<std::mutex> guard{mutex_};
  if (may_read_locked() && !finished_ && !finish_after_write_ && !read_ended_ &&
      reactor_ != nullptr)
    start_read_locked();
  else
    read_paused_ = true;
}

void session_bridge::on_write_done(bool ok) {
  caller_runs runner{system_}; // runs the actor told `writable` below
  std::lock_guard<std::mutex> guard{mutex_};
  write_pending_ = false;
  writing_.Clear();
  if (!ok) {
    queued_.clear();
    finish_locked(grpc::Status{grpc::StatusCode::CANCELLED,
                               "writing to the client failed"},
                  "write_failed");
    return;
  }
  if (!queued_.empty()) {
    // The next frame goes out from this gRPC thread: no actor round trip.
    auto next = std::move(queued_.front());
    queued_.pop_front();
    start_write_locked(next);
    return;
  }
  if (finish_after_write_) {
    finish_locked(*finish_after_write_, "error"); // its reason is set
    return;
  }
  if (write_wanted_) {
    write_wanted_ = false;
    caf::anon_send(actor_, writable_atom_v);
  }
}

void session_bridge::on_cancel_known() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (ended_.empty() && !finished_)
    ended_ = "client_cancelled";
}

void session_bridge::on_done() {
  std::lock_guard<std::mutex> guard{mutex_};
  // Set before the actor hears of the end (below), so its last log line
  // says how the stream ended.
  if (ended_.empty())
    ended_ = "client_cancelled";
  reactor_ = nullptr;
  finished_ = true;
  write_pending_ = false;
  queued_.clear();
  reading_.Clear();
  writing_.Clear();
  if (actor_)
    caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
}

} // namespace tb
