#include "net/log.hpp"

#include <atomic>
#include <string>

#include <grpc/support/log.h>

namespace tb::log {

namespace {

std::atomic<level> grpc_level{level::warn};

} // namespace

void capture_grpc_logs() {
  gpr_set_log_function([](gpr_log_func_args* args) {
    write(grpc_level.load(), std::string{"grpc: "} + args->message);
  });
}

void set_grpc_level(level lvl) {
  grpc_level = lvl;
}

} // namespace tb::log
