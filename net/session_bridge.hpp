// The one lock between gRPC threads and CAF: links a stream's reactor to its
// session actor.

#pragma once

#include <cstddef>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include "actors/protocol.hpp"
#include "actors/session/frame_sink.hpp"
#include "net/session_stream.hpp"

namespace tb {

/// The frame sink of one Session stream, shared by its stream (gRPC threads:
/// a callback reactor, or the completion-queue stream's polling thread) and
/// its session actor (CAF threads).
///
/// Every call into the stream (start_read, start_write, finish) happens
/// under this object's mutex, and so does every stream callback; gRPC never
/// completes an operation inline, so this cannot deadlock. `Finish` is called
/// exactly once on every path: by the actor, on a failed write, or at shutdown.
/// After OnDone the reactor is gone and every call here does nothing.
///
/// Client frames arrive as raw bytes and are parsed here: a frame that does
/// not parse as a ClientFrame ends the stream with INVALID_ARGUMENT and a
/// message that says why, and is logged at warn (spec 7: a malformed frame
/// is the one thing a stream cannot go on from). An empty frame parses (to
/// a frame with no request) and the session answers it with an error frame.
///
/// Backpressure: at most `max_unread` client frames are handed to the actor
/// and not yet released with `frame_consumed()`; beyond that the bridge stops
/// reading, so a fast client cannot grow the actor's mailbox without bound.
/// Outbound, up to `max_queued_frames` serialized frames wait behind the one
/// being written; each completed write starts the next on the gRPC thread,
/// so a burst of answers costs the actor no wake-up per frame.
class session_bridge : public frame_sink {
public:
  /// Most serialized frames queued behind the one being written.
  static constexpr std::size_t max_queued_frames = 64;

  /// Reading pauses while the unreleased client frames hold this many
  /// bytes (or `max_unread` frames), whichever comes first.
  static constexpr std::size_t max_unread_bytes = 16u << 20;

  /// Creates the bridge of `stream`, whose client is `peer`, authenticated
  /// by `credential` as token `token` (both empty when auth is off), and
  /// named `client_name` by itself (empty if it chose no name).
  session_bridge(session_stream* stream, std::size_t max_unread,
                 std::string peer, std::string credential = {},
                 std::string token = {}, std::string client_name = {});

  /// Returns what authenticated the client (see `auth_outcome`), so that a
  /// reload can look its token up again. Immutable; thread-safe.
  const std::string& credential() const noexcept {
    return credential_;
  }

  /// Returns the name of the client's token. Immutable; thread-safe.
  const std::string& token() const noexcept {
    return token_;
  }

  /// Returns the client's address, as gRPC names it.
  std::string peer() const override {
    return peer_;
  }

  /// Returns the name the client chose for itself. Immutable; thread-safe.
  std::string client_name() const override {
    return client_name_;
  }

  /// Returns how the stream ended: the reason of the first end the bridge
  /// was asked for, or `client_cancelled` if the stream ended without one.
  /// Thread-safe.
  std::string end_reason() const override;

  /// Binds the session actor and starts reading. Reactor thread only.
  void start(session_actor actor);

  /// Sets the largest client frame it reads (`grpc_frame_limit`); a
  /// larger one ends the stream with RESOURCE_EXHAUSTED naming the limit,
  /// logged at warn (issue 26). Unset: no limit but gRPC's.
  void set_max_frame_bytes(std::size_t bytes);

  /// Returns the session actor once started (else an invalid handle).
  /// Thread-safe.
  session_actor actor();

  // -- frame_sink (session actor only)
  // ------------------------------------------

  bool ready_to_write() override;

  bool can_queue() override;

  void write(std::unique_ptr<tinybroker::v1::ServerFrame> frame) override;

  void frame_consumed() override;

  void finish(ec code, const std::string& text) override;

  /// Ends the stream with UNAUTHENTICATED and `text` because its token was
  /// revoked: the session's last log line says `ended=token_revoked`.
  void revoke(const std::string& text);

  // -- reactor callbacks (gRPC threads)
  // -----------------------------------------

  /// A read completed; `ok` is false once the client stopped sending,
  /// `cancelled` true if it did so by cancelling the call (or the
  /// connection broke) rather than by half-closing the stream.
  void on_read_done(bool ok, bool cancelled = false);

  /// A write completed; `ok` is false if the stream broke.
  void on_write_done(bool ok);

  /// The call turned out cancelled after its read end was reported as a
  /// half-close (the completion-queue form learns of a cancel only from the
  /// call's done notification, which may come late): a stream not finished
  /// yet ends as `client_cancelled`.
  void on_cancel_known();

  /// The stream is over; its stream object is about to be deleted.
  void on_done();

private:
  // Hands a completed read to the session actor (and runs the actors it
  // made runnable); true if the next read may follow.
  bool hand_over(bool ok, bool cancelled, client_frame_ptr frame,
                 const grpc::Status& parsed, std::size_t size);
  // Starts the next read; pauses reading while too much is unread or once
  // the stream is finishing.
  void read_next();
  void start_read_locked();
  bool may_read_locked() const;
  void start_write_locked(grpc::ByteBuffer& bytes);
  void finish_locked(const grpc::Status& status, const char* reason);
  void finish_or_defer_locked(const grpc::Status& status, const char* reason);

  mutable std::mutex mutex_;
  // The stream; null once it is over (on_done).
  session_stream* reactor_;
  std::string peer_;
  std::string credential_;
  std::string token_;
  std::string client_name_;
  session_actor actor_;
  // The actor's system, so that a gRPC thread can run the session actor
  // itself (actors/scheduler/caller_runs.hpp); set once in start().
  caf::actor_system* system_ = nullptr;
  grpc::ByteBuffer reading_;
  grpc::ByteBuffer writing_;
  // Serialized frames waiting for `writing_`; non-empty only while a write
  // is pending.
  std::deque<grpc::ByteBuffer> queued_;
  bool write_pending_ = false;
  std::optional<grpc::Status> finish_after_write_;
  std::size_t unread_ = 0;
  // The bytes of the unreleased frames, and each frame's size in read order.
  std::size_t unread_bytes_ = 0;
  std::deque<std::size_t> unread_sizes_;
  std::size_t max_unread_;
  bool read_paused_ = false;
  bool read_ended_ = false;
  // The largest client frame read (grpc_frame_limit); a larger one ends
  // the stream with RESOURCE_EXHAUSTED.
  std::size_t max_frame_bytes_ = std::numeric_limits<std::size_t>::max();
  bool write_wanted_ = false;
  bool finished_ = false;
  // How the stream ended (see frame_sink::end_reason); empty while it runs.
  std::string ended_;
};

} // namespace tb
