#include "client/grpc_log.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <grpc/support/log.h>

namespace tb::client {

namespace {

// The program's name, and whether the user asked for gRPC's own lines.
struct log_route {
  std::mutex mutex;
  std::string program = "tinybroker";
  bool verbose = false;
};

log_route& route() {
  static log_route instance;
  return instance;
}

// Returns true if `text` contains `part`.
bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Writes one gRPC log line through the program's error output.
void write_line(gpr_log_func_args* args) {
  auto& r = route();
  std::lock_guard<std::mutex> guard{r.mutex};
  std::string_view file = args->file != nullptr ? args->file : "";
  std::string_view message = args->message != nullptr ? args->message : "";
  if (!r.verbose && explained_by_client(file, message))
    return;
  std::fprintf(stderr, "%s: grpc: %.*s\n", r.program.c_str(),
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
}

} // namespace

bool explained_by_client(std::string_view file, std::string_view message) {
  return contains(file, "ssl_transport_security") ||
         contains(file, "security_connector") || contains(file, "handshaker") ||
         contains(file, "secure_endpoint") ||
         contains(message, "Handshake failed") ||
         contains(message, "Failed to create channel args") ||
         contains(message, "Failed to create secure subchannel") ||
         contains(message, "peer certificate");
}

void route_grpc_log(const std::string& program) {
  auto& r = route();
  {
    std::lock_guard<std::mutex> guard{r.mutex};
    r.program = program;
    const char* verbosity = std::getenv("GRPC_VERBOSITY");
    r.verbose = verbosity != nullptr && *verbosity != '\0';
  }
  gpr_set_log_function(write_line);
}

} // namespace tb::client
