// One Session stream on gRPC's asynchronous completion-queue API: the form
// of net/session_reactor.hpp for `[grpc] transport = "cq"`, where the
// broker's own polling thread (net/cq_server.hpp) takes every event of the
// stream and runs the session actors it makes runnable (caller_runs), with
// no hand-off between gRPC's threads (docs/performance.md, "The
// completion-queue transport").

#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_set>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/async_stream.h>

#include "net/session_stream.hpp"

namespace tb {

class broker_service;
class cq_session;
class session_bridge;
class session_registry;

/// What the broker's completion queue hands back: every tag is one of
/// these, and the polling thread calls `proceed` with gRPC's `ok`.
class cq_event {
public:
  /// Handles the event on the polling thread.
  virtual void proceed(bool ok) = 0;

protected:
  ~cq_event() = default;
};

/// Asks gRPC for one Session stream on a completion queue (raw bytes both
/// ways, as the callback form). Implemented by net/cq_server.cpp's service.
class cq_session_source {
public:
  /// The stream type: raw bytes, parsed and serialized by the bridge.
  using raw_stream =
      grpc::ServerAsyncReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

  virtual ~cq_session_source() = default;

  /// Requests the next Session call into `ctx` and `stream`; `tag` comes
  /// back on `cq` when it arrives (ok) or the server stops (not ok).
  virtual void request_session(grpc::ServerContext* ctx, raw_stream* stream,
                               grpc::ServerCompletionQueue* cq, void* tag) = 0;

  /// Keeps `session`, whose call ended before its session actor finished
  /// the stream, until the actor does (see `cq_session`); false once
  /// `release_held` ran, and then the session does not wait.
  bool hold(cq_session* session);

  /// Forgets `session`, whose wait ended; `ended` follows once it
  /// detached its bridge (or knows it will not). Its polling thread only.
  void forget(cq_session* session);

  /// See `forget`.
  void ended();

  /// Counts a session as created (`listen`)...
  void created();

  /// ... and as deleted: its last operation came back.
  void deleted();

  /// Lets every held session go without its actor's finish, and any later
  /// one at once: the queue is about to shut down, and a session still
  /// waiting would keep it from doing so. Waits up to `patience` for every
  /// session to be deleted (the server shut down first, so each call was
  /// cancelled and its operations come back), so that no operation starts
  /// on the queue once it is shut down: neither an actor's nor one the
  /// polling thread starts for a late completion (a cancelled write whose
  /// bridge then finishes the stream). Call before shutting it down, with
  /// its polling thread running.
  void release_held(std::chrono::milliseconds patience);

private:
  std::mutex held_mutex_;
  std::condition_variable held_gone_;
  std::unordered_set<cq_session*> held_;
  std::size_t ending_ = 0; // forgotten, not yet detached
  std::size_t live_ = 0;   // created, not yet deleted
  bool releasing_ = false;
};

/// How long a stream whose read failed waits for the call's done
/// notification before it tells its bridge the client half-closed: the
/// longest a client's close waits more on this transport than on the
/// callback one.
inline constexpr std::chrono::milliseconds read_end_grace{2};

/// One Session stream on a completion queue, from the request of the call
/// to its end. It admits the stream as the callback path does
/// (`broker_service::admit_session`: shutdown, auth, client name; then the
/// registry's `max_sessions`), opens it with the same bridge
/// (net/session_open.hpp) and forwards each completion to the bridge. It
/// counts its pending operations, the notification that the call is done
/// among them; when none is left and the stream was finished it detaches
/// the bridge (`on_done`, as the reactor's OnDone), unregisters it and
/// deletes itself. Reads, writes and the finish are started under the
/// bridge's lock from any thread; every completion runs on the queue's
/// polling thread.
///
/// A call that ends before the bridge finished it (the client cancelled, or
/// its connection broke) waits for that finish, as gRPC's callback API
/// waits for Finish before OnDone: the session actor first routes and
/// confirms the publish frames it has read (the bridge told it the stream
/// closed), then finishes. Detaching earlier stopped the actor with a frame
/// still waiting for its shards' de-duplication answer: the ids were marked
/// as seen, the messages never routed, and the client's resend was
/// confirmed as a duplicate (issue 31, 256 messages lost: one frame). The
/// wait is an alarm that never fires by itself; the finish cancels it, and
/// so does `cq_session_source::release_held` when the queue stops.
class cq_session final : public session_stream {
public:
  /// Waits for the next Session stream of `source` on `cq`, to be served
  /// by `service`. The polling thread of `cq` takes it from there.
  static void listen(broker_service& service, cq_session_source& source,
                     grpc::ServerCompletionQueue* cq);

  cq_session(const cq_session&) = delete;
  cq_session& operator=(const cq_session&) = delete;

  // -- session_stream (under the bridge's lock, any thread) ------------------

  void start_read(grpc::ByteBuffer* bytes) override;

  void start_write(const grpc::ByteBuffer* bytes,
                   grpc::WriteOptions options) override;

  void finish(const grpc::Status& status) override;

  /// Starts waiting for the bridge's finish, unless it came; true if it
  /// waits. Called by `cq_session_source::hold`, under its lock.
  bool arm_hold();

  /// Ends the wait for the finish (its alarm comes back cancelled) without
  /// it. Called by `cq_session_source::release_held`, under its lock.
  void cancel_hold();

private:
  // One kind of completion of this stream.
  class event final : public cq_event {
  public:
    event(cq_session* owner, void (cq_session::*handler)(bool))
        : owner_(owner), handler_(handler) {
      // nop
    }

    void proceed(bool ok) override;

  private:
    cq_session* owner_;
    void (cq_session::*handler_)(bool);
  };

  cq_session(broker_service& service, cq_session_source& source,
             grpc::ServerCompletionQueue* cq);

  ~cq_session() override;

  void on_request(bool ok);
  void on_read(bool ok);
  void on_read_end(bool ok);
  void on_write(bool ok);
  void on_finish(bool ok);
  void on_call_done(bool ok);
  void on_hold_end(bool ok);
  // One operation less; detaches and deletes once none is left (and the
  // stream was finished, see `wait_for_finish`).
  void op_done();
  // Nothing is pending: true if the session now waits for the bridge's
  // finish (counted as an operation), false if it may detach.
  bool wait_for_finish();

  broker_service& service_;
  cq_session_source& source_;
  grpc::ServerCompletionQueue* cq_;
  grpc::ServerContext context_;
  cq_session_source::raw_stream stream_{&context_};
  event request_ev_{this, &cq_session::on_request};
  event read_ev_{this, &cq_session::on_read};
  event read_end_ev_{this, &cq_session::on_read_end};
  event write_ev_{this, &cq_session::on_write};
  event finish_ev_{this, &cq_session::on_finish};
  event done_ev_{this, &cq_session::on_call_done};
  event hold_ev_{this, &cq_session::on_hold_end};
  // Holds a failed read back until the done notification came or
  // `read_end_grace` passed (see on_read), so that a cancel is known when
  // the bridge hears of the end.
  grpc::Alarm read_end_alarm_;
  // The wait for the bridge's finish after the call ended (see the class).
  grpc::Alarm hold_alarm_;
  // Guards the three below: set by `finish` (any thread, under the bridge's
  // lock) and by the polling thread.
  std::mutex hold_mutex_;
  bool finish_started_ = false;
  bool holding_ = false;    // hold_alarm_ is set and not yet back
  bool hold_ended_ = false; // it came back: no second wait
  std::shared_ptr<session_bridge> bridge_;
  // Where bridge_ is registered (set with it).
  session_registry* registry_ = nullptr;
  // Operations started and not yet completed (the request, the done
  // notification, reads, writes, the finish, the alarms). Started on any
  // thread, completed on the polling thread.
  std::atomic<int> pending_{0};
  // Polling thread only:
  bool call_done_ = false;        // the done notification came
  bool read_end_waiting_ = false; // read_end_alarm_ is set and not yet back
  bool detached_ = false;         // the bridge heard on_done
};

} // namespace tb
