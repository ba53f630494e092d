// The broker's limits.max_message_bytes as a client learns it (the Info
// call) and checks a message against it before sending (issue 26, point
// 3): a larger message is refused by the client with one sentence naming
// its size and the limit, instead of being sent to be refused, or of
// reaching gRPC's frame limit and tearing the stream down. Shared by the
// sync `connection::publish` (so by tinybroker-cli pub) and the
// `async_client`.
//
//   auto limit = tb::client::ask_max_message_bytes(stub, deadline);
//   if (limit)
//     status = tb::client::check_message_size(message, *limit, address);

#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "tinybroker.grpc.pb.h"

namespace tb::client {

/// The reason a message refused for its size carries, as the broker's.
inline constexpr const char* message_too_large_reason = "message_too_large";

/// Returns the size of `message` as the broker counts it against
/// limits.max_message_bytes: its payload, headers (names and values) and
/// key; not its topic.
std::size_t counted_message_bytes(const tinybroker::v1::Message& message);

/// Asks the broker behind `stub` for its limits.max_message_bytes with the
/// Info call, waiting until `deadline`. Returns the limit; 0 (nothing to
/// check) for a broker without Info (UNIMPLEMENTED) or whose Info the
/// client may not call; nothing when the call failed otherwise (ask again
/// later).
std::optional<std::size_t>
ask_max_message_bytes(tinybroker::v1::Broker::Stub& stub,
                      std::chrono::system_clock::time_point deadline);

/// Returns OK if `message` fits `max_bytes` (0: no limit known), else
/// RESOURCE_EXHAUSTED "message to \"TOPIC\" has N bytes (payload, headers
/// and key); the broker at ADDRESS takes at most M
/// (limits.max_message_bytes); nothing was sent" (without " at ADDRESS"
/// when `address` is empty).
grpc::Status check_message_size(const tinybroker::v1::Message& message,
                                std::size_t max_bytes,
                                const std::string& address);

} // namespace tb::client
