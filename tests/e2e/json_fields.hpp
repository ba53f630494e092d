// Reading numbers out of the one-line JSON objects the tools print
// (tinybroker-bench --json), for the end-to-end tests of the tools.

#pragma once

#include <regex>
#include <string>

#include <gtest/gtest.h>

namespace tb::test {

/// Returns the number after `"key":` in the JSON object `json`; fails the
/// test and returns -1 when it is not there.
inline double json_number(const std::string& json, const std::string& key) {
  std::smatch match;
  std::regex field{"\"" + key + "\":(-?[0-9.eE+]+)"};
  if (!std::regex_search(json, match, field)) {
    ADD_FAILURE() << "no number \"" << key << "\" in " << json;
    return -1;
  }
  return std::stod(match[1]);
}

} // namespace tb::test
