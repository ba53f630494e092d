#include "net/log.hpp"

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>

#include <grpc/support/log.h>

#include "log/rate_limiter.hpp"

namespace tb::log {

namespace {

std::atomic<level> grpc_level{level::warn};

// gRPC logs one line per failed TLS handshake (a plaintext client, a wrong
// or missing client certificate, a port scanner): a client's doing, so
// rate limited like refusals. gRPC logs from its own threads, hence the
// lock; the count held back is reported with the next failure after the
// window.
struct handshake_limit {
  std::mutex mutex;
  rate_limiter limiter;
};

// Writes gRPC's `message` at `lvl`, unless it is a failed handshake beyond
// the rate limit.
void write_grpc(level lvl, std::string_view message) {
  if (message.find("Handshake failed") != std::string_view::npos) {
    static handshake_limit handshakes;
    std::lock_guard<std::mutex> guard{handshakes.mutex};
    auto verdict = handshakes.limiter.admit("tls_handshake",
                                            rate_limiter::clock_type::now());
    if (verdict.ended)
      write_suppressed(lvl, "failed TLS handshakes", *verdict.ended);
    if (!verdict.write)
      return;
  }
  write(lvl, std::string{"grpc: "}.append(message));
}

} // namespace

void capture_grpc_logs() {
  gpr_set_log_function([](gpr_log_func_args* args) {
    write_grpc(grpc_level.load(), args->message);
  });
}

void set_grpc_level(level lvl) {
  grpc_level = lvl;
}

} // namespace tb::log
