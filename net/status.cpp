#include "net/status.hpp"

namespace tb {

grpc::Status to_grpc_status(ec code, const std::string& text) {
  if (code == ec::none)
    return grpc::Status::OK;
  auto status_code = static_cast<grpc::StatusCode>(grpc_status_code(code));
  return grpc::Status{status_code, std::string{to_string(code)} + ": " + text};
}

} // namespace tb
