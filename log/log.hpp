// The broker's logger: one line per event on standard error, as text or as
// JSON, with named fields.
//
//   2026-12-03T09:00:00.123Z INFO  session opened peer=ipv4:127.0.0.1:5000
//   {"ts":"2026-12-03T09:00:00.123Z","level":"info","msg":"session opened",
//    "peer":"ipv4:127.0.0.1:5000"}                    (one line in the output)
//
// Plain C++ with no CAF and no gRPC, so that actors, the gRPC side and tools
// log the same way. Every function here is thread-safe. A line is built
// before the output lock is taken; only the write itself is serialized.
// Callers that log per message must check `enabled()` first (the broker logs
// nothing per message at `info`).

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tb::log {

/// Severity of a log line; lines below the configured level are skipped.
enum class level { trace, debug, info, warn, error, off };

/// How lines are written: `text` for people, `json` for log shippers.
enum class format { text, json };

/// Parses "trace", "debug", "info", "warn", "error" or "off"; false if
/// `text` names no level.
bool parse_level(std::string_view text, level& out);

/// Parses "text" or "json"; false if `text` names no format.
bool parse_format(std::string_view text, format& out);

/// Returns the lower-case name of `lvl`, e.g. `"warn"`.
std::string_view to_string(level lvl) noexcept;

/// Returns the name of `fmt`: `"text"` or `"json"`.
std::string_view to_string(format fmt) noexcept;

/// One named value of a log line: text, a whole number or a flag. It only
/// refers to its name and text, so it lives no longer than the call that
/// writes it.
class field {
public:
  /// What the value is.
  enum class kind : uint8_t { text, unsigned_number, signed_number, flag };

  /// A text value.
  field(std::string_view name, std::string_view value) noexcept
      : name_(name), kind_(kind::text), text_(value) {
    // nop
  }

  /// A text value.
  field(std::string_view name, const std::string& value) noexcept
      : field(name, std::string_view{value}) {
    // nop
  }

  /// A text value.
  field(std::string_view name, const char* value) noexcept
      : field(name, std::string_view{value}) {
    // nop
  }

  /// A flag, written as `true` or `false`.
  field(std::string_view name, bool value) noexcept
      : name_(name), kind_(kind::flag), unsigned_(value ? 1 : 0) {
    // nop
  }

  /// A whole number.
  template <class T, class = std::enable_if_t<std::is_integral_v<T> &&
                                              !std::is_same_v<T, bool>>>
  field(std::string_view name, T value) noexcept : name_(name) {
    if constexpr (std::is_signed_v<T>) {
      kind_ = kind::signed_number;
      signed_ = static_cast<int64_t>(value);
    } else {
      kind_ = kind::unsigned_number;
      unsigned_ = static_cast<uint64_t>(value);
    }
  }

  /// Returns the field's name.
  std::string_view name() const noexcept {
    return name_;
  }

  /// Returns what the value is.
  kind what() const noexcept {
    return kind_;
  }

  /// Returns the text of a text value.
  std::string_view text() const noexcept {
    return text_;
  }

  /// Returns an unsigned number, or a flag as 0 or 1.
  uint64_t unsigned_value() const noexcept {
    return unsigned_;
  }

  /// Returns a signed number.
  int64_t signed_value() const noexcept {
    return signed_;
  }

private:
  std::string_view name_;
  kind kind_ = kind::text;
  std::string_view text_;
  uint64_t unsigned_ = 0;
  int64_t signed_ = 0;
};

/// The fields of one line, in the order they are written.
using fields = std::initializer_list<field>;

/// Sets the lowest level that is written.
void set_level(level lvl);

/// Returns the lowest level that is written.
level current_level();

/// Sets how lines are written.
void set_format(format fmt);

/// Returns how lines are written.
format current_format();

/// Returns true if lines of `lvl` are written.
bool enabled(level lvl);

/// With `on`, text lines leave out the timestamp and start with the
/// syslog priority (`<6>` for info, ...), which the systemd journal reads
/// as the line's level and replaces with its own timestamp. JSON lines are
/// unchanged.
void set_journal_prefixes(bool on);

/// Returns true if standard error is the systemd journal: `JOURNAL_STREAM`
/// names its device and inode (systemd.exec(5)).
bool stderr_is_journal();

/// Returns the syslog priority of `lvl` (7 debug and trace, 6 info, 4 warn,
/// 3 error).
int syslog_priority(level lvl) noexcept;

/// Writes one line: a timestamp, the level, `msg` and `extra` fields.
void write(level lvl, std::string_view msg, fields extra = {});

/// Writes one line with fields gathered at run time.
void write(level lvl, std::string_view msg, const std::vector<field>& extra);

/// Receives each finished line, without its newline.
using writer = std::function<void(std::string_view line)>;

/// Sends lines to `out` instead of standard error (tests); an empty writer
/// restores standard error. Returns the previous writer.
writer set_writer(writer out);

/// Writes `msg` (ASCII, no quotes or control characters) at `lvl` with
/// only `snprintf`, `gmtime_r` and `::write`: no lock and no allocation, for
/// a watchdog thread that must not touch the process's state.
void write_raw(level lvl, const char* msg) noexcept;

/// Writes an info line.
inline void info(std::string_view msg, fields extra = {}) {
  write(level::info, msg, extra);
}

/// Writes a warning line.
inline void warn(std::string_view msg, fields extra = {}) {
  write(level::warn, msg, extra);
}

/// Writes an error line.
inline void error(std::string_view msg, fields extra = {}) {
  write(level::error, msg, extra);
}

/// Writes a debug line.
inline void debug(std::string_view msg, fields extra = {}) {
  write(level::debug, msg, extra);
}

// -- formatting (log_line.cpp) ------------------------------------------------
//
// Building a line apart from writing it, so that the escaping rules are
// tested without a clock or an output. Either format keeps a line one line:
// newlines and other control characters are escaped, and bytes that are not
// UTF-8 are escaped (text) or replaced with U+FFFD (JSON), so that a line
// never breaks a parser.

/// Returns `t` as `2026-12-03T09:00:00.123Z` (UTC, milliseconds).
std::string format_timestamp(std::chrono::system_clock::time_point t);

/// Appends `text` to `out` as a JSON string, quotes included.
void append_json_string(std::string& out, std::string_view text);

/// Appends `text` to `out` for a text line: control characters and bytes
/// that are not UTF-8 become `\n`, `\t`, `\xHH` and so on; with `quote`,
/// the result is in double quotes with `"` and `\` escaped too.
void append_text_escaped(std::string& out, std::string_view text, bool quote);

/// Returns true if a text value must be quoted: it is empty or holds a
/// space, `"`, `=`, `\` or a character that would be escaped.
bool needs_quotes(std::string_view value);

/// Returns the line for an event with `count` fields at `extra`, without
/// the trailing newline.
std::string format_line(format fmt, std::string_view timestamp, level lvl,
                        std::string_view msg, const field* extra,
                        std::size_t count);

/// Returns the line for an event, without the trailing newline.
inline std::string format_line(format fmt, std::string_view timestamp,
                               level lvl, std::string_view msg, fields extra) {
  return format_line(fmt, timestamp, lvl, msg, extra.begin(), extra.size());
}

} // namespace tb::log
