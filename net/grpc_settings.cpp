#include "net/grpc_settings.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include <absl/synchronization/mutex.h>

namespace tb {

namespace {

// The first read buffer of a connection, grown by gRPC while reads fill it
// (up to `max_read_chunk`). gRPC's default is 8 KiB, held by every idle
// connection.
constexpr int first_read_chunk = 256;

// The largest read buffer of a connection, so that one that went idle after
// a burst holds at most this much.
constexpr int max_read_chunk = 64 << 10;

} // namespace

void prefer_sized_reads() {
  constexpr const char* name = "GRPC_EXPERIMENTS";
  const char* set = std::getenv(name);
  std::string value = set != nullptr ? set : "";
  if (value.find("tcp_read_chunks") != std::string::npos)
    return;
  value += value.empty() ? "-tcp_read_chunks" : ",-tcp_read_chunks";
  setenv(name, value.c_str(), 1);
}

void skip_lock_order_checks() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

std::size_t grpc_frame_limit(const limits_config& limits) {
  // Protobuf's framing of one message in a publish frame: tags, lengths,
  // the message's own fields. Generous; the headroom covers the rest.
  constexpr std::size_t per_message_framing = 64;
  constexpr std::size_t most = INT_MAX; // gRPC takes an int
  auto message = std::min(limits.max_message_bytes, most) +
                 std::min(limits.max_topic_bytes, most) + per_message_framing;
  auto batch = std::min(limits.max_publish_batch, most);
  // What a legal publish frame may hold, without overflowing.
  auto legal = batch > most / message ? most : batch * message;
  auto bytes = std::min(legal, std::max(max_grpc_message_bytes, message));
  return std::min(bytes + frame_headroom_bytes, most);
}

std::size_t grpc_receive_limit(const limits_config& limits) {
  constexpr std::size_t most = INT_MAX;
  auto frame = grpc_frame_limit(limits);
  return frame > most - frame / 4 ? most : frame + frame / 4;
}

void add_connection_settings(grpc::ServerBuilder& builder,
                             std::size_t receive_limit) {
  auto receive = std::min<std::size_t>(receive_limit, INT_MAX);
  builder.SetMaxReceiveMessageSize(static_cast<int>(receive));
  // A delivery frame carries one message of up to max_message_bytes alone.
  builder.SetMaxSendMessageSize(
      static_cast<int>(std::max(max_grpc_message_bytes, receive)));
  builder.AddChannelArgument(GRPC_ARG_TCP_READ_CHUNK_SIZE, first_read_chunk);
  builder.AddChannelArgument(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, max_read_chunk);
  // Zero-copy is off, but gRPC allocates 4 records per connection unless
  // told 0.
  builder.AddChannelArgument(GRPC_ARG_TCP_TX_ZEROCOPY_MAX_SIMULT_SENDS, 0);
  // No channelz service is registered.
  builder.AddChannelArgument(GRPC_ARG_ENABLE_CHANNELZ, 0);
}

} // namespace tb
