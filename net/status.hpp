// Turns tinybroker error codes into gRPC statuses.

#pragma once

#include <string>

#include <grpcpp/support/status.h>

#include "actors/error.hpp"

namespace tb {

/// Returns the gRPC status for `code` with `text` as its message; OK for
/// `ec::none`. The code table itself is `grpc_status_code` in
/// actors/error.cpp.
grpc::Status to_grpc_status(ec code, const std::string& text);

/// Returns the gRPC status for `error`.
inline grpc::Status to_grpc_status(const error_info& error) {
  return to_grpc_status(error.code, error.text);
}

} // namespace tb
