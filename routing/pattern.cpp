#include "routing/pattern.hpp"

#include <vector>

namespace tb {

namespace {

// Returns the first token of `name` (all of it if it has no '.').
std::string_view first_token(std::string_view name) {
  return name.substr(0, name.find('.'));
}

} // namespace

error_info validate_pattern(std::string_view pattern,
                            const name_limits& limits) {
  return detail::validate_name(pattern, limits, true);
}

bool pattern_matches(std::string_view pattern, std::string_view topic) {
  auto head = first_token(pattern);
  if (is_system_topic(topic) && (head == "*" || head == ">"))
    return false;
  std::vector<std::string_view> pats;
  std::vector<std::string_view> toks;
  split_tokens(pattern, pats);
  split_tokens(topic, toks);
  for (std::size_t i = 0; i < pats.size(); ++i) {
    if (pats[i] == ">")
      return i < toks.size(); // one or more tokens left
    if (i >= toks.size())
      return false;
    if (pats[i] != "*" && pats[i] != toks[i])
      return false;
  }
  return pats.size() == toks.size();
}

bool is_literal_pattern(std::string_view pattern) {
  std::size_t start = 0;
  for (;;) {
    auto dot = pattern.find('.', start);
    auto token = pattern.substr(start, dot == std::string_view::npos
                                           ? std::string_view::npos
                                           : dot - start);
    if (token == "*" || token == ">")
      return false;
    if (dot == std::string_view::npos)
      return true;
    start = dot + 1;
  }
}

} // namespace tb
