// Captures the logger's lines in a test, and restores the logger after it.

#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "log/log.hpp"

namespace tb::test {

/// Sends every log line to a list for as long as it lives, at `lvl` and in
/// `fmt`; the previous writer, level and format come back afterwards.
class log_capture {
public:
  /// Starts capturing.
  explicit log_capture(log::level lvl = log::level::info,
                       log::format fmt = log::format::text)
      : level_(log::current_level()), format_(log::current_format()) {
    log::set_level(lvl);
    log::set_format(fmt);
    previous_ = log::set_writer([this](std::string_view line) {
      std::lock_guard<std::mutex> guard{mutex_};
      lines_.emplace_back(line);
    });
  }

  /// Stops capturing.
  ~log_capture() {
    log::set_writer(std::move(previous_));
    log::set_level(level_);
    log::set_format(format_);
  }

  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;

  /// Returns the lines written so far.
  std::vector<std::string> lines() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return lines_;
  }

  /// Returns the lines that contain `text`.
  std::vector<std::string> matching(std::string_view text) const {
    std::vector<std::string> result;
    for (auto& line : lines())
      if (line.find(text) != std::string::npos)
        result.push_back(line);
    return result;
  }

  /// Returns true if a line contains `text`.
  bool contains(std::string_view text) const {
    return !matching(text).empty();
  }

  /// Forgets the lines written so far.
  void clear() {
    std::lock_guard<std::mutex> guard{mutex_};
    lines_.clear();
  }

private:
  log::level level_;
  log::format format_;
  log::writer previous_;
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

} // namespace tb::test
