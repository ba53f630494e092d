// The gRPC side of one Session stream.

#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <grpcpp/grpcpp.h>

#include "actors/broker_context.hpp"
#include "auth/token_table.hpp"
#include "net/log_actor.hpp"
#include "net/session_open.hpp"
#include "net/session_stream.hpp"
#include "routing/error.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb {

class session_bridge;
class session_registry;

/// The reactor type of a Session stream. It carries raw bytes both ways:
/// the bridge parses each client frame itself, so that a frame that does not
/// parse ends the stream with INVALID_ARGUMENT naming why (gRPC's own
/// parsing would only report the end of the stream), and serializes each
/// server frame before it takes its lock.
using session_stream_reactor =
    grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>;

/// Reacts to one Session stream's gRPC events (callback API) and forwards
/// them to its bridge; spawns the stream's session actor and deletes itself
/// in OnDone. `[grpc] transport = "callback"`; net/session_cq.hpp is the
/// completion-queue form.
class session_reactor final : public session_stream_reactor,
                              public session_stream {
public:
  /// Spawns the session actor and starts reading the stream of `call`
  /// (whose peer and `client_name`, if any, name the client in log lines);
  /// a refused stream is reported to `parts.logger`.
  session_reactor(const session_parts& parts, grpc::CallbackServerContext* call,
                  auth_outcome who, std::string client_name = {});

  /// Forwards a finished read to the bridge.
  void OnReadDone(bool ok) override;

  /// Forwards a finished write to the bridge.
  void OnWriteDone(bool ok) override;

  /// Detaches the bridge, unregisters and deletes this reactor.
  void OnDone() override;

  /// Nothing to do: a cancelled stream also fails its pending read.
  void OnCancel() override;

  // -- session_stream (under the bridge's lock) ------------------------------

  void start_read(grpc::ByteBuffer* bytes) override;

  void start_write(const grpc::ByteBuffer* bytes,
                   grpc::WriteOptions options) override;

  void finish(const grpc::Status& status) override;

private:
  std::shared_ptr<session_bridge> bridge_;
  session_registry& registry_;
  grpc::CallbackServerContext* call_;
};

/// The live session bridges and unary calls, so that a shutdown can end
/// every stream and wait for every call. Thread-safe.
class session_registry {
public:
  /// Serves at most `max_sessions` streams at once (`limits.max_sessions`).
  explicit session_registry(std::size_t max_sessions = SIZE_MAX)
      : max_sessions_(max_sessions) {
    // nop
  }

  /// Adds a bridge, or returns why not (and adds nothing): the broker is
  /// shutting down, or serves `max_sessions` streams already.
  error_info add(const std::shared_ptr<session_bridge>& bridge);

  /// Removes a bridge.
  void remove(const std::shared_ptr<session_bridge>& bridge);

  /// Refuses new bridges and ends every live stream with UNAVAILABLE.
  void shut_down();

  /// Returns the number of live bridges.
  std::size_t size() const;

  /// Returns the session actors of the live streams.
  std::vector<session_actor> actors() const;

  /// Applies reloaded `tokens` to the live streams: a stream whose token is
  /// gone ends with UNAUTHENTICATED; the others get their token's
  /// permissions as they are now. Returns how many streams ended.
  std::size_t reauthorize(const token_table& tokens);

  /// Counts a unary call in flight (so shutdown can wait for it).
  void call_started();

  /// Counts a unary call as done.
  void call_done();

  /// Waits until no stream and no unary call is left, or `deadline`;
  /// returns true if none is left.
  bool wait_idle(std::chrono::system_clock::time_point deadline);

private:
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t calls_ = 0;
  std::size_t max_sessions_;
  bool shutting_down_ = false;
  std::vector<std::shared_ptr<session_bridge>> bridges_;
};

} // namespace tb
