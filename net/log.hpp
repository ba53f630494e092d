// A minimal leveled logger writing one line per event to standard error.

#pragma once

#include <string>
#include <string_view>

namespace tb::log {

/// Severity of a log line; lines below the configured level are skipped.
enum class level { trace, debug, info, warn, error, off };

/// Parses "trace", "debug", "info", "warn", "error" or "off"; false if
/// `text` names no level.
bool parse_level(std::string_view text, level& out);

/// Sets the lowest level that is written. Thread-safe.
void set_level(level lvl);

/// Returns true if lines of `lvl` are written.
bool enabled(level lvl);

/// Writes one line with a timestamp and the level. Thread-safe.
void write(level lvl, std::string_view text);

/// Sends gRPC's own log lines through `write`, prefixed `grpc: `, at the
/// level set by `set_grpc_level` (warn unless changed). Call once, before
/// gRPC logs anything worth keeping.
void capture_grpc_logs();

/// Sets the level gRPC's log lines are written at: the broker lowers them to
/// debug while it starts to listen, since it explains a failed bind itself.
void set_grpc_level(level lvl);

/// Writes an info line.
inline void info(std::string_view text) {
  write(level::info, text);
}

/// Writes a warning line.
inline void warn(std::string_view text) {
  write(level::warn, text);
}

/// Writes an error line.
inline void error(std::string_view text) {
  write(level::error, text);
}

/// Writes a debug line.
inline void debug(std::string_view text) {
  write(level::debug, text);
}

} // namespace tb::log
