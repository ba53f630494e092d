// A config error as one log line per problem (issue 26, point 11): the
// start-up errors and a failed SIGHUP reload are logged with it, since
// toml11's messages span several lines (a quote of the file's line, a caret
// note, hints).
//
//   for (const auto& line : tb::problem_lines(loaded.error()))
//     logger.error(line);

#pragma once

#include <string>
#include <vector>

#include "config/config_loader.hpp"

namespace tb {

/// Returns the problems of `err` one line each, for a log where every line
/// is one event: toml11's quote of the line is dropped, its caret note kept
/// in parentheses unless the message says it already, its hints dropped,
/// and `FILE:LINE: TOML syntax error` joined with the message after it,
/// e.g. `tb.toml:2: TOML syntax error: missing value after key-value
/// separator '=' (expected value, but got nothing)`.
std::vector<std::string> problem_lines(const config_error& err);

} // namespace tb
