// The gRPC server settings every tinybroker listener uses, apart from the
// broker so that tools/relay (the transport's floor, docs/performance.md)
// runs gRPC exactly as the broker does.

#pragma once

#include <cstddef>

#include <grpcpp/server_builder.h>

#include "config/broker_config.hpp"

namespace tb {

/// The largest gRPC message the broker reads (and writes) by default, and
/// the most bytes of publish frames that `grpc_frame_limit` allows for
/// batches: bounded, like every buffer.
constexpr std::size_t max_grpc_message_bytes = 64 << 20;

/// Room in a frame for what is not payload: the framing of many messages,
/// subscribe batches, answers. A frame never gets less than this.
constexpr std::size_t frame_headroom_bytes = 8 << 20;

/// The largest client frame (gRPC message) the broker takes, from `limits`
/// (issue 26): a publish frame of `max_publish_batch` messages of up to
/// `max_message_bytes`, with their topics and framing, bounded by
/// `max_grpc_message_bytes` for batches, yet always room for one message of
/// `max_message_bytes`; plus `frame_headroom_bytes`. At most 2 GiB - 1. A
/// session ends a stream whose frame is larger with RESOURCE_EXHAUSTED
/// naming the limit (net/session_bridge.hpp). A client never sends one if
/// it refuses messages over Info's `max_message_bytes` and puts at most
/// `max_publish_batch` messages and `max_grpc_message_bytes` of them in a
/// frame (one larger message goes alone).
std::size_t grpc_frame_limit(const limits_config& limits);

/// What gRPC itself reads: `grpc_frame_limit` and a quarter more (at most
/// 2 GiB - 1), so that a frame just over the frame limit reaches the
/// session, which refuses it naming the limit. gRPC refuses a still larger
/// one with RESOURCE_EXHAUSTED ("Received message larger than max (N vs.
/// LIMIT)"), ending the stream in a way the broker cannot tell from a
/// client's close or cancel in its log.
std::size_t grpc_receive_limit(const limits_config& limits);

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
/// channelz entries; and the message size bounds: `receive_limit` bytes
/// read (see `grpc_receive_limit`), and as many (at least
/// `max_grpc_message_bytes`) written.
void add_connection_settings(
    grpc::ServerBuilder& builder,
    std::size_t receive_limit = max_grpc_message_bytes);

} // namespace tb
