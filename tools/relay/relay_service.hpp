// tinybroker-relay's service: a bare gRPC callback server with no actors,
// which forwards each publish frame from a publisher's stream to every
// subscriber's stream, in the broker's own frame types. It is the floor of
// what gRPC costs per message on a machine (docs/performance.md,
// "Latency at everyday rates"); the load generator drives it as it drives
// the broker.

#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "tinybroker.grpc.pb.h"
#include "tools/relay/relay_hub.hpp"

namespace tb::relay {

class relay_stream;

/// The write side of one stream, shared by the stream's reactor and every
/// publisher that forwards to it; outlives the reactor (then drops frames).
class stream_writer {
public:
  /// Serves the writes of `reactor`.
  explicit stream_writer(relay_stream* reactor) : reactor_(reactor) {}

  /// Writes `frame` now, or after the writes before it; ends the stream
  /// with RESOURCE_EXHAUSTED when `max_queued_frames` wait already.
  void write(std::unique_ptr<tinybroker::v1::ServerFrame> frame);

  /// Called from OnWriteDone: starts the next queued write, if any.
  void write_done(bool ok);

  /// Ends the stream with `status` once the writes before it are done.
  void finish(grpc::Status status);

  /// Called from OnDone: the reactor is gone, writes are dropped.
  void detach();

  /// Frames that may wait behind a pending write (bounded, like every
  /// buffer of the broker's).
  static constexpr std::size_t max_queued_frames = 4096;

private:
  void start_write_locked();
  void finish_locked(grpc::Status status);

  std::mutex mutex_;
  relay_stream* reactor_;
  std::unique_ptr<tinybroker::v1::ServerFrame> writing_;
  std::deque<std::unique_ptr<tinybroker::v1::ServerFrame>> queued_;
  bool finished_ = false;
  bool finish_after_writes_ = false;
  grpc::Status final_status_;
};

/// Who takes the relayed messages (tools/relay/relay_hub.hpp).
using callback_hub = relay_hub<stream_writer>;

/// One Session stream: reads frames and answers or forwards each on the
/// thread gRPC called it on.
class relay_stream final
    : public grpc::ServerBidiReactor<tinybroker::v1::ClientFrame,
                                     tinybroker::v1::ServerFrame> {
public:
  /// Starts reading; subscriptions go to `hub`.
  explicit relay_stream(callback_hub& hub);

  /// Handles one frame, then reads the next; a half-close finishes.
  void OnReadDone(bool ok) override;

  /// Passes the write's end to the writer.
  void OnWriteDone(bool ok) override;

  /// Drops the stream's subscriptions and deletes this reactor.
  void OnDone() override;

private:
  void handle(const tinybroker::v1::ClientFrame& frame);

  callback_hub& hub_;
  std::shared_ptr<stream_writer> writer_;
  tinybroker::v1::ClientFrame reading_;
};

/// The relay's gRPC service: only Session; every other call is
/// UNIMPLEMENTED.
class relay_service final : public tinybroker::v1::Broker::CallbackService {
public:
  /// Opens a relay stream.
  grpc::ServerBidiReactor<tinybroker::v1::ClientFrame,
                          tinybroker::v1::ServerFrame>*
  Session(grpc::CallbackServerContext* context) override;

  /// Answers OK: a Subscribe with a group joins it (see relay_hub::join).
  grpc::ServerUnaryReactor*
  CreateGroup(grpc::CallbackServerContext* context,
              const tinybroker::v1::CreateGroupRequest* request,
              tinybroker::v1::GroupInfo* reply) override;

  /// Forgets the group and answers OK.
  grpc::ServerUnaryReactor*
  DeleteGroup(grpc::CallbackServerContext* context,
              const tinybroker::v1::DeleteGroupRequest* request,
              tinybroker::v1::DeleteGroupReply* reply) override;

private:
  callback_hub hub_;
};

} // namespace tb::relay
