// Clients that send raw bytes to the broker (frames that need not parse),
// and read the broker's memory use, for the bad input tests.

#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/sync_stream.h>
#include <sys/types.h>

#include "client/connection.hpp"
#include "tinybroker.pb.h"

namespace tb::test {

/// Returns a one-slice ByteBuffer holding `bytes`.
inline grpc::ByteBuffer to_byte_buffer(const std::string& bytes) {
  grpc::Slice slice{bytes};
  return grpc::ByteBuffer{&slice, 1};
}

/// Returns the bytes `buffer` holds.
inline std::string from_byte_buffer(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (buffer.Dump(&slices).ok())
    for (auto& slice : slices)
      out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  return out;
}

/// Makes a channel to `address` without client-side message size limits,
/// so that the broker's own limits are what a test meets; with
/// `own_connection`, it does not share a TCP connection with other channels.
inline std::shared_ptr<grpc::Channel> raw_channel(const std::string& address,
                                                  bool own_connection = false) {
  grpc::ChannelArguments args;
  if (own_connection)
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxSendMessageSize(-1);
  args.SetMaxReceiveMessageSize(-1);
  client::limit_connect_attempts(args);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

/// Returns a channel of its own (see `raw_channel`) whose connection is up,
/// or null. A connect that gets no answer (its SYN lost; on the test
/// machines that was a partition test's nftables table left behind, whose
/// rules dropped packets of any connection on their port numbers: see
/// tests/cluster/cluster_partition.hpp) is dropped after 2 s and another
/// one made, counted in `lost`, until `lost` passes `max_lost`; the broker
/// plays no part before a connection is up.
inline std::shared_ptr<grpc::Channel>
connected_raw_channel(const std::string& address, int& lost, int max_lost) {
  for (;;) {
    auto channel = raw_channel(address, true);
    if (channel->WaitForConnected(std::chrono::system_clock::now() +
                                  std::chrono::seconds(2)))
      return channel;
    if (++lost > max_lost)
      return nullptr;
  }
}

/// A Session stream that carries raw bytes, through the same generic call
/// the generated stubs make but with grpc::ByteBuffer for both directions.
/// Blocking; every call ends by the stream's deadline at the latest.
class raw_session {
public:
  /// Opens the stream on `channel`; it ends after `lifetime` in any case.
  explicit raw_session(
      const std::shared_ptr<grpc::Channel>& channel,
      std::chrono::milliseconds lifetime = std::chrono::seconds(90)) {
    static const grpc::internal::RpcMethod method{
        "/tinybroker.v1.Broker/Session",
        grpc::internal::RpcMethod::BIDI_STREAMING};
    ctx_.set_deadline(std::chrono::system_clock::now() + lifetime);
    stream_.reset(grpc::internal::ClientReaderWriterFactory<
                  grpc::ByteBuffer, grpc::ByteBuffer>::Create(channel.get(),
                                                              method, &ctx_));
  }

  /// Sends `bytes` as one frame; false once the stream is broken.
  bool send_bytes(const std::string& bytes) {
    auto buffer = to_byte_buffer(bytes);
    return stream_->Write(buffer);
  }

  /// Sends `frame` serialized.
  bool send(const tinybroker::v1::ClientFrame& frame) {
    return send_bytes(frame.SerializeAsString());
  }

  /// Reads the next frame; nothing once the broker ended the stream.
  std::optional<tinybroker::v1::ServerFrame> read() {
    grpc::ByteBuffer buffer;
    if (!stream_->Read(&buffer))
      return std::nullopt;
    tinybroker::v1::ServerFrame frame;
    if (!frame.ParseFromString(from_byte_buffer(buffer)))
      return std::nullopt;
    return frame;
  }

  /// Reads until a frame of `kind` arrives; nothing if the stream ends
  /// first.
  std::optional<tinybroker::v1::ServerFrame>
  read_until(tinybroker::v1::ServerFrame::KindCase kind) {
    for (;;) {
      auto frame = read();
      if (!frame || frame->kind_case() == kind)
        return frame;
    }
  }

  /// Reads every frame left until the broker ends the stream and returns
  /// the final status.
  grpc::Status finish() {
    grpc::ByteBuffer ignored;
    while (stream_->Read(&ignored))
      ; // drain
    return stream_->Finish();
  }

  /// Half-closes the stream and returns the final status.
  grpc::Status close() {
    stream_->WritesDone();
    return finish();
  }

  /// Cancels the stream.
  void cancel() {
    ctx_.TryCancel();
  }

private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>>
      stream_;
};

/// Calls the unary Publish method with `bytes` as the request; returns the
/// status and stores the reply's bytes in `reply` if given.
inline grpc::Status raw_publish(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& bytes,
                                std::string* reply = nullptr) {
  static const grpc::internal::RpcMethod method{
      "/tinybroker.v1.Broker/Publish", grpc::internal::RpcMethod::NORMAL_RPC};
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto request = to_byte_buffer(bytes);
  grpc::ByteBuffer response;
  auto status =
      grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer,
                                        grpc::ByteBuffer, grpc::ByteBuffer>(
          channel.get(), method, &ctx, request, &response);
  if (reply != nullptr && status.ok())
    *reply = from_byte_buffer(response);
  return status;
}

#if defined(__SANITIZE_ADDRESS__) || defined(TINYBROKER_TSAN)
/// True in the sanitizer builds (`scripts/setup.sh asan`, `tsan`), where the
/// broker runs several times slower and its RSS is mostly the sanitizer's.
inline constexpr bool under_sanitizer = true;
#else
/// True in the sanitizer builds (`scripts/setup.sh asan`, `tsan`), where the
/// broker runs several times slower and its RSS is mostly the sanitizer's.
inline constexpr bool under_sanitizer = false;
#endif

/// True when the broker's RSS tells about its own memory use: not under
/// AddressSanitizer (shadow memory, a quarantine of freed blocks of 256 MiB
/// by default) nor ThreadSanitizer (shadow memory, history). Tests print
/// their RSS figures either way and assert bounds on them only when this
/// holds.
inline constexpr bool rss_is_meaningful = !under_sanitizer;

/// Returns the resident set size of process `pid` in KiB (VmRSS in
/// /proc/<pid>/status), or 0 if it cannot be read.
inline uint64_t rss_kib(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoull(line.substr(6));
  return 0;
}

/// Formats KiB as MiB with one decimal.
inline std::string mib(uint64_t kib) {
  auto tenths = (kib * 10 + 512) / 1024;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) +
         " MiB";
}

} // namespace tb::test
