// The operations a session bridge asks of its Session stream, whichever
// gRPC API carries it: the callback API (net/session_reactor.hpp) or the
// completion-queue API with the broker's own polling thread
// (net/session_cq.hpp).

#pragma once

#include <grpcpp/impl/call_op_set.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

namespace tb {

/// One Session stream as its bridge (net/session_bridge.hpp) drives it. The
/// bridge calls these under its lock, with at most one read and one write
/// outstanding and `finish` exactly once, never while a write is
/// outstanding; each completion comes back to the bridge
/// (`on_read_done`, `on_write_done`, `on_done`) on a gRPC thread, never
/// inline.
class session_stream {
public:
  virtual ~session_stream() = default;

  /// Reads the next client frame into `bytes`.
  virtual void start_read(grpc::ByteBuffer* bytes) = 0;

  /// Writes `bytes`, which stay untouched until the write completes.
  virtual void start_write(const grpc::ByteBuffer* bytes,
                           grpc::WriteOptions options) = 0;

  /// Ends the stream with `status`.
  virtual void finish(const grpc::Status& status) = 0;
};

} // namespace tb
