#include "log/log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

namespace tb::log {

namespace {

std::atomic<level> level_{level::info};
std::atomic<format> format_{format::text};
std::atomic<bool> journal_{false};

// Guards the writer and the output, so that lines never interleave.
std::mutex output_mutex;
writer custom_writer;

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

bool parse_format(std::string_view text, format& out) {
  if (text == "text") {
    out = format::text;
    return true;
  }
  if (text == "json") {
    out = format::json;
    return true;
  }
  return false;
}

std::string_view to_string(level lvl) noexcept {
  switch (lvl) {
  case level::trace:
    return "trace";
  case level::debug:
    return "debug";
  case level::info:
    return "info";
  case level::warn:
    return "warn";
  case level::error:
    return "error";
  case level::off:
    break;
  }
  return "off";
}

std::string_view to_string(format fmt) noexcept {
  return fmt == format::json ? "json" : "text";
}

void set_level(level lvl) {
  level_ = lvl;
}

level current_level() {
  return level_.load();
}

void set_format(format fmt) {
  format_ = fmt;
}

format current_format() {
  return format_.load();
}

bool enabled(level lvl) {
  return lvl != level::off && lvl >= level_.load(std::memory_order_relaxed);
}

void set_journal_prefixes(bool on) {
  journal_ = on;
}

bool stderr_is_journal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr)
    return false;
  unsigned long long device = 0;
  unsigned long long inode = 0;
  if (std::sscanf(stream, "%llu:%llu", &device, &inode) != 2)
    return false;
  struct stat info {};
  if (fstat(STDERR_FILENO, &info) != 0)
    return false;
  return static_cast<unsigned long long>(info.st_dev) == device &&
         static_cast<unsigned long long>(info.st_ino) == inode;
}

int syslog_priority(level lvl) noexcept {
  switch (lvl) {
  case level::error:
    return 3;
  case level::warn:
    return 4;
  case level::info:
    return 6;
  default:
    return 7;
  }
}

namespace {

void write_fields(level lvl, std::string_view msg, const field* extra,
                  std::size_t count) {
  if (!enabled(lvl))
    return;
  auto fmt = format_.load();
  std::string line;
  if (fmt == format::text && journal_.load()) {
    line = '<' + std::to_string(syslog_priority(lvl)) + '>';
    line += format_line(fmt, {}, lvl, msg, extra, count);
  } else {
    line = format_line(fmt, format_timestamp(std::chrono::system_clock::now()),
                       lvl, msg, extra, count);
  }
  std::lock_guard<std::mutex> guard{output_mutex};
  if (custom_writer) {
    custom_writer(line);
    return;
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

} // namespace

void write(level lvl, std::string_view msg, fields extra) {
  write_fields(lvl, msg, extra.begin(), extra.size());
}

void write(level lvl, std::string_view msg, const std::vector<field>& extra) {
  write_fields(lvl, msg, extra.data(), extra.size());
}

writer set_writer(writer out) {
  std::lock_guard<std::mutex> guard{output_mutex};
  return std::exchange(custom_writer, std::move(out));
}

void write_raw(level lvl, const char* msg) noexcept {
  if (!enabled(lvl))
    return;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  std::tm parts{};
  gmtime_r(&now.tv_sec, &parts);
  char stamp[32];
  auto n = std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &parts);
  std::snprintf(stamp + n, sizeof(stamp) - n, ".%03dZ",
                static_cast<int>(now.tv_nsec / 1000000));
  static constexpr const char* upper_names[] = {"TRACE", "DEBUG", "INFO",
                                                "WARN",  "ERROR", "OFF"};
  char line[512];
  auto name = to_string(lvl);
  int len = 0;
  if (format_.load() == format::json)
    len = std::snprintf(line, sizeof(line),
                        "{\"ts\":\"%s\",\"level\":\"%.*s\",\"msg\":\"%s\"}\n",
                        stamp, static_cast<int>(name.size()), name.data(), msg);
  else if (journal_.load())
    len =
        std::snprintf(line, sizeof(line), "<%d>%-5s %s\n", syslog_priority(lvl),
                      upper_names[static_cast<int>(lvl)], msg);
  else
    len = std::snprintf(line, sizeof(line), "%s %-5s %s\n", stamp,
                        upper_names[static_cast<int>(lvl)], msg);
  if (len <= 0)
    return;
  auto size = std::min(static_cast<std::size_t>(len), sizeof(line) - 1);
  [[maybe_unused]] auto written = ::write(2, line, size);
}

} // namespace tb::log
