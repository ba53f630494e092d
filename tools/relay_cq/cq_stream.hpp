// tinybroker-relay-cq's streams: the relay of tools/relay (every publish
// frame to every subscription, one group member in turn, the broker's frame
// types) on gRPC's asynchronous completion-queue API, so that the thread
// that polled a frame's event runs its work (docs/performance.md, "The
// floors: callback vs completion-queue").

#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "tinybroker.grpc.pb.h"
#include "tools/relay/relay_hub.hpp"

namespace tb::relay_cq {

/// What a completion queue hands back: each tag is one of these.
class cq_tag {
public:
  virtual ~cq_tag() = default;

  /// Runs on the polling thread that took the event; `ok` as gRPC gave it.
  virtual void proceed(bool ok) = 0;
};

class cq_stream;

/// Who takes the relayed messages (tools/relay/relay_hub.hpp, as the
/// callback relay's).
using cq_hub = relay::relay_hub<cq_stream>;

/// The calls a completion queue may still be asked to accept, and how many
/// it holds: closed before the relay stops, and waited on until every call
/// is done, so that no operation reaches a queue that is shut down.
class cq_gate {
public:
  /// Runs `request` and counts its call unless the gate is closed; returns
  /// whether it ran.
  template <class Request>
  bool run(Request&& request) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (closed_)
      return false;
    request();
    ++live_;
    return true;
  }

  /// A call counted by `run` is done: nothing of it is pending any more.
  void leave() {
    std::lock_guard<std::mutex> guard{mutex_};
    if (--live_ == 0)
      idle_.notify_all();
  }

  /// Refuses every later request.
  void close() {
    std::lock_guard<std::mutex> guard{mutex_};
    closed_ = true;
  }

  /// Waits up to `timeout` until no call is left; returns whether none is.
  bool wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> guard{mutex_};
    return idle_.wait_for(guard, timeout, [this] { return live_ == 0; });
  }

private:
  std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t live_ = 0;
  bool closed_ = false;
};

/// One Session stream, as a state machine on its completion queue: one
/// read outstanding until the client ends, at most one write outstanding
/// with a bounded queue of frames behind it, Finish exactly once. Kept
/// alive by itself while an operation is pending.
class cq_stream : public std::enable_shared_from_this<cq_stream> {
public:
  /// The gRPC service the relay requests its calls from.
  using service = tinybroker::v1::Broker::AsyncService;

  /// Frames that may wait behind a pending write, as in tools/relay.
  static constexpr std::size_t max_queued_frames = 4096;

  /// Asks `cq` for the next Session call, for a new stream (unless `gate`
  /// is closed).
  static void listen(cq_hub& hub, service& svc, grpc::ServerCompletionQueue* cq,
                     cq_gate& gate);

  /// Writes `frame` now or after the writes before it (from any thread);
  /// ends the stream with RESOURCE_EXHAUSTED when `max_queued_frames` wait
  /// already; dropped once the stream is finishing.
  void write(std::unique_ptr<tinybroker::v1::ServerFrame> frame);

  /// Use `listen`.
  cq_stream(cq_hub& hub, service& svc, grpc::ServerCompletionQueue* cq,
            cq_gate& gate);

private:
  // One kind of completion of this stream.
  class op final : public cq_tag {
  public:
    op(cq_stream* stream, void (cq_stream::*handler)(bool))
        : stream_(stream), handler_(handler) {}
    void proceed(bool ok) override {
      (stream_->*handler_)(ok);
    }

  private:
    cq_stream* stream_;
    void (cq_stream::*handler_)(bool);
  };

  void on_request(bool ok);
  void on_read(bool ok);
  void on_write(bool ok);
  void on_finish(bool ok);
  void handle(const tinybroker::v1::ClientFrame& frame);
  void start_write_locked();
  void finish_locked(grpc::Status status);
  // One operation less; returns the last reference when none is left.
  std::shared_ptr<cq_stream> op_done_locked();
  // Drops the hub's references to a stream nothing is pending on, and
  // its count in the gate.
  void release(std::shared_ptr<cq_stream> last);

  cq_hub& hub_;
  service& service_;
  grpc::ServerCompletionQueue* cq_;
  cq_gate& gate_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<tinybroker::v1::ServerFrame,
                                tinybroker::v1::ClientFrame>
      stream_{&context_};
  op request_op_{this, &cq_stream::on_request};
  op read_op_{this, &cq_stream::on_read};
  op write_op_{this, &cq_stream::on_write};
  op finish_op_{this, &cq_stream::on_finish};
  tinybroker::v1::ClientFrame reading_; // only the reading thread uses it

  std::mutex mutex_; // guards everything below
  std::shared_ptr<cq_stream> self_;
  int pending_ = 0;
  bool started_ = false;
  bool finish_started_ = false;
  bool finish_after_writes_ = false;
  grpc::Status final_status_;
  std::unique_ptr<tinybroker::v1::ServerFrame> writing_;
  std::deque<std::unique_ptr<tinybroker::v1::ServerFrame>> queued_;
};

} // namespace tb::relay_cq
