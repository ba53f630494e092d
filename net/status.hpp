// Turns tinybroker error codes into gRPC statuses, and requests that do not
// parse into INVALID_ARGUMENT.

#pragma once

#include <string>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include "routing/error.hpp"

namespace google::protobuf {
class MessageLite;
} // namespace google::protobuf

namespace tb {

/// Returns the gRPC status for `code` with `text` as its message; OK for
/// `ec::none`. The code table itself is `grpc_status_code` in
/// routing/error.cpp.
grpc::Status to_grpc_status(ec code, const std::string& text);

/// Returns the gRPC status for `error`.
inline grpc::Status to_grpc_status(const error_info& error) {
  return to_grpc_status(error.code, error.text);
}

/// Parses `bytes` into `msg`; returns OK, or INVALID_ARGUMENT
/// (`invalid_request`) with a message naming the size, the expected type and
/// why the bytes do not parse. Leaves `bytes` as it was.
grpc::Status parse_request(grpc::ByteBuffer& bytes,
                           google::protobuf::MessageLite& msg);

} // namespace tb
