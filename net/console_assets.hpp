// The console's page, script and styles (console/), built into the broker
// by cmake/console.cmake: served from memory, no file or network needed.

#pragma once

#include <string_view>

namespace tb {

/// One file of the console.
struct console_asset {
  /// The path it is served at: `/` for index.html, else `/NAME`.
  std::string_view path;
  /// Its Content-Type.
  std::string_view content_type;
  /// Its bytes.
  std::string_view body;
};

/// Returns the file served at `path`, or null.
const console_asset* find_console_asset(std::string_view path);

} // namespace tb
