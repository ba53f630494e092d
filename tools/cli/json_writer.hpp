// A small writer of compact, one-line JSON for tinybroker-cli's --json
// output: the one place that escapes strings.

#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tb::cli {

/// Builds one JSON value on one line. Members of an object take a name;
/// elements of an array (and the top-level value) take an empty name.
class json_writer {
public:
  /// Opens an object.
  json_writer& open_object(std::string_view name = {});

  /// Closes the innermost object.
  json_writer& close_object();

  /// Opens an array.
  json_writer& open_array(std::string_view name = {});

  /// Closes the innermost array.
  json_writer& close_array();

  /// Writes a string (which must be UTF-8; use `bytes` for payloads).
  json_writer& text(std::string_view name, std::string_view value);

  /// Writes an unsigned number.
  json_writer& number(std::string_view name, uint64_t value);

  /// Writes a signed number.
  json_writer& signed_number(std::string_view name, int64_t value);

  /// Writes a floating-point number in its shortest exact form; NaN and
  /// infinities, which JSON cannot hold, as null.
  json_writer& real(std::string_view name, double value);

  /// Writes true or false.
  json_writer& boolean(std::string_view name, bool value);

  /// Writes arbitrary bytes: as string member `name` when they are valid
  /// UTF-8, else as member `<name>_base64` holding their base64 encoding.
  json_writer& bytes(std::string_view name, std::string_view value);

  /// Returns the JSON written so far.
  const std::string& str() const {
    return out_;
  }

private:
  // Writes the separator and the member name, if any.
  void begin_value(std::string_view name);

  std::string out_;
  // One entry per open object or array: true until its first value.
  std::vector<bool> first_;
};

/// Returns the standard base64 encoding of `bytes`, with padding.
std::string base64(std::string_view bytes);

} // namespace tb::cli
