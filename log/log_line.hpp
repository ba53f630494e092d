// Formatting one log line, separate from writing it, so that the escaping
// rules can be tested without a clock or an output.
//
// Text lines:  TIMESTAMP LEVEL msg name=value name="value with spaces"
// JSON lines:  {"ts":"TIMESTAMP","level":"info","msg":"...","name":value}
//
// Either way a line is exactly one line: newlines and other control
// characters are escaped, and bytes that are not UTF-8 are escaped (text)
// or replaced with U+FFFD (JSON), so that a line never breaks a parser.

#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "log/log.hpp"

namespace tb::log {

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
