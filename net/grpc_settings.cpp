#include "net/grpc_settings.hpp"

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

void add_connection_settings(grpc::ServerBuilder& builder) {
  builder.SetMaxReceiveMessageSize(max_grpc_message_bytes);
  builder.SetMaxSendMessageSize(max_grpc_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_TCP_READ_CHUNK_SIZE, first_read_chunk);
  builder.AddChannelArgument(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, max_read_chunk);
  // Zero-copy is off, but gRPC allocates 4 records per connection unless
  // told 0.
  builder.AddChannelArgument(GRPC_ARG_TCP_TX_ZEROCOPY_MAX_SIMULT_SENDS, 0);
  // No channelz service is registered.
  builder.AddChannelArgument(GRPC_ARG_ENABLE_CHANNELZ, 0);
}

} // namespace tb
