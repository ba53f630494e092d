#include "net/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

#include <grpc/support/log.h>

namespace tb::log {

namespace {

std::atomic<level> current_level{level::info};
std::atomic<level> grpc_level{level::warn};
std::mutex output_mutex;

const char* name_of(level lvl) {
  switch (lvl) {
  case level::trace:
    return "TRACE";
  case level::debug:
    return "DEBUG";
  case level::info:
    return "INFO";
  case level::warn:
    return "WARN";
  case level::error:
    return "ERROR";
  case level::off:
    break;
  }
  return "";
}

} // namespace

bool parse_level(std::string_view text, level& out) {
  constexpr std::pair<std::string_view, level> names[] = {
      {"trace", level::trace}, {"debug", level::debug}, {"info", level::info},
      {"warn", level::warn},   {"error", level::error}, {"off", level::off},
  };
  for (auto& [name, lvl] : names)
    if (text == name) {
      out = lvl;
      return true;
    }
  return false;
}

void set_level(level lvl) {
  current_level = lvl;
}

bool enabled(level lvl) {
  return lvl != level::off && lvl >= current_level.load();
}

void write(level lvl, std::string_view text) {
  if (!enabled(lvl))
    return;
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto millis = duration_cast<milliseconds>(now.time_since_epoch()) % 1000;
  std::tm parts{};
  gmtime_r(&secs, &parts);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &parts);
  std::lock_guard<std::mutex> guard{output_mutex};
  std::fprintf(stderr, "%s.%03dZ %-5s %.*s\n", stamp,
               static_cast<int>(millis.count()), name_of(lvl),
               static_cast<int>(text.size()), text.data());
  std::fflush(stderr);
}

void capture_grpc_logs() {
  gpr_set_log_function([](gpr_log_func_args* args) {
    write(grpc_level.load(), std::string{"grpc: "} + args->message);
  });
}

void set_grpc_level(level lvl) {
  grpc_level = lvl;
}

} // namespace tb::log
