// Helpers shared by the topic and pattern tests.

#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tb::test {

/// Builds a name of `tokens` tokens, each `token`, joined by '.'.
inline std::string repeat_tokens(std::string_view token, std::size_t tokens) {
  std::string result;
  for (std::size_t i = 0; i < tokens; ++i) {
    if (i > 0)
      result += '.';
    result += token;
  }
  return result;
}

} // namespace tb::test
