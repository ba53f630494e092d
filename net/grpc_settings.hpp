// The gRPC server settings every tinybroker listener uses, apart from the
// broker so that tools/relay (the transport's floor, docs/performance.md)
// runs gRPC exactly as the broker does.

#pragma once

#include <grpcpp/server_builder.h>

namespace tb {

/// The largest gRPC message the broker reads: a publish frame of many
/// messages. Bounded, like every buffer.
constexpr int max_grpc_message_bytes = 64 << 20;

/// Turns off gRPC 1.51's `tcp_read_chunks` experiment, which reads into
/// fixed 8 KiB buffers and ignores the read chunk settings; kept if
/// GRPC_EXPERIMENTS already names it. gRPC reads the variable once, before
/// its first TCP read: call this before building the server.
void prefer_sized_reads();

/// Turns off abseil's lock-order checks. Debian builds abseil without
/// NDEBUG, so every absl::Mutex that gRPC takes records its lock order in a
/// global graph (absl's GraphCycles): about 1-3% of the broker's CPU under
/// load (docs/performance.md, "Where the time goes"). Only the diagnosis of
/// a lock-order inversion is lost, which release builds never have.
void skip_lock_order_checks();

/// Sets what each connection costs at rest (docs/performance.md, "Memory
/// per session"): small first read buffers, no zero-copy send records, no
/// channelz entries; and the message size bounds.
void add_connection_settings(grpc::ServerBuilder& builder);

} // namespace tb
