// Where a session actor writes frames: the gRPC bridge in production,
// a recording sink in tests.

#pragma once

#include <memory>
#include <string>

#include "routing/error.hpp"

namespace tinybroker::v1 {
class ServerFrame;
} // namespace tinybroker::v1

namespace tb {

/// The outbound side of one client stream, as its session actor sees it.
///
/// Frames are written in the order given, one at a time; a sink may queue
/// a few small frames behind the one being written (`can_queue`), so
/// answers need no round trip to the actor per frame. When `ready_to_write`
/// or `can_queue` answers false, the sink sends `writable_atom` to the
/// session actor once the stream can take the next frame. All functions are
/// called only from the session actor.
class frame_sink {
public:
  virtual ~frame_sink() = default;

  /// Returns true if nothing is being written, so a frame written now goes
  /// out at once (deliveries wait for this, and meanwhile coalesce);
  /// otherwise arranges for a `writable_atom` once the writes in progress
  /// complete. Returns false for good once the stream ended.
  virtual bool ready_to_write() = 0;

  /// Returns true if `write` may be called now, to queue a frame behind the
  /// ones being written; otherwise arranges for a `writable_atom` as
  /// `ready_to_write` does. A sink without a queue answers as
  /// `ready_to_write`.
  virtual bool can_queue() {
    return ready_to_write();
  }

  /// Starts writing `frame`, or queues it behind the frames being written;
  /// only after `ready_to_write()` or `can_queue()` returned true.
  virtual void write(std::unique_ptr<tinybroker::v1::ServerFrame> frame) = 0;

  /// Tells the reader that the actor has processed one client frame, so the
  /// next one may be read (inbound backpressure).
  virtual void frame_consumed() = 0;

  /// Ends the stream: with OK when `code` is `ec::none`, else with the gRPC
  /// status that `code` maps to. Later calls do nothing.
  virtual void finish(ec code, const std::string& text) = 0;

  /// Returns the client's address as gRPC reports it ("ipv4:127.0.0.1:5000"),
  /// for Stats and log lines; empty if unknown.
  virtual std::string peer() const {
    return {};
  }

  /// Returns the name the client chose for itself (metadata
  /// `tinybroker-client-name`), for Stats and log lines; empty if none.
  virtual std::string client_name() const {
    return {};
  }

  /// Returns how the stream ended, for the session's last log line:
  /// `client_closed`, `client_cancelled` (the client cancelled the call or
  /// the connection broke), `broker_shutdown`, `malformed_frame`,
  /// `write_failed` or an error code's name; empty while the stream runs or
  /// if the sink cannot tell. Called from the session actor only.
  virtual std::string end_reason() const {
    return {};
  }
};

/// A shared handle to a frame sink.
using frame_sink_ptr = std::shared_ptr<frame_sink>;

} // namespace tb
