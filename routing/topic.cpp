#include "routing/topic.hpp"

#include <cstdio>
#include <string>

namespace tb {

namespace {

// Renders `name` in double quotes, escaping quotes, backslashes and control
// bytes so an error text never carries raw control characters.
std::string quote(std::string_view name) {
  std::string result;
  result.reserve(name.size() + 2);
  result += '"';
  for (char ch : name) {
    auto byte = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      result += '\\';
      result += ch;
    } else if (byte < 0x20 || byte == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", byte);
      result += buf;
    } else {
      result += ch;
    }
  }
  result += '"';
  return result;
}

// Returns the problem of one token, or an empty string if it is fine.
// `index` is 1-based; `last` tells whether this is the final token.
std::string token_problem(std::string_view token, std::size_t index, bool last,
                          bool is_pattern) {
  auto at = "token " + std::to_string(index);
  if (token.empty())
    return "empty token " + std::to_string(index);
  if (token == "*" || token == ">") {
    if (!is_pattern)
      return at + " is a wildcard; publish needs a literal topic";
    if (token == ">" && !last)
      return at + " is '>', which may only be the last token";
    return {};
  }
  for (char ch : token) {
    auto byte = static_cast<unsigned char>(ch);
    if (ch == ' ')
      return at + " contains a space";
    if (byte < 0x20 || byte == 0x7f) {
      char buf[48];
      std::snprintf(buf, sizeof(buf), " contains a control character (0x%02x)",
                    byte);
      return at + buf;
    }
    if (ch == '*' || ch == '>') {
      if (is_pattern)
        return at + " mixes '" + ch + "' with other characters; '" + ch +
               "' must be a whole token";
      return at + " contains '" + ch + "', which only patterns may use";
    }
  }
  return {};
}

} // namespace

namespace detail {

error_info validate_name(std::string_view name, const name_limits& limits,
                         bool is_pattern) {
  const char* noun = is_pattern ? "pattern" : "topic";
  auto code = is_pattern ? ec::invalid_pattern : ec::invalid_topic;
  if (name.empty())
    return make_error_info(code, std::string{noun} + " \"\" is empty");
  if (name.size() > limits.max_bytes)
    return make_error_info(code, std::string{noun} + " of " +
                                     std::to_string(name.size()) +
                                     " bytes exceeds the limit of " +
                                     std::to_string(limits.max_bytes));
  std::size_t tokens = 1;
  for (char ch : name)
    if (ch == '.')
      ++tokens;
  if (tokens > limits.max_tokens)
    return make_error_info(code, std::string{noun} + " " + quote(name) + ": " +
                                     std::to_string(tokens) +
                                     " tokens exceed the limit of " +
                                     std::to_string(limits.max_tokens));
  std::size_t index = 1;
  std::size_t start = 0;
  for (;;) {
    auto dot = name.find('.', start);
    auto last = dot == std::string_view::npos;
    auto token = name.substr(start, last ? name.size() - start : dot - start);
    auto problem = token_problem(token, index, last, is_pattern);
    if (!problem.empty())
      return make_error_info(code, std::string{noun} + " " + quote(name) +
                                       ": " + problem);
    if (last)
      return {};
    start = dot + 1;
    ++index;
  }
}

} // namespace detail

error_info validate_topic(std::string_view topic, const name_limits& limits) {
  return detail::validate_name(topic, limits, false);
}

bool is_system_topic(std::string_view name) {
  return !name.empty() && name.front() == '$';
}

void split_tokens(std::string_view s, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t start = 0;
  for (;;) {
    auto dot = s.find('.', start);
    if (dot == std::string_view::npos) {
      out.push_back(s.substr(start));
      return;
    }
    out.push_back(s.substr(start, dot - start));
    start = dot + 1;
  }
}

error_info validate_group_name(std::string_view name) {
  constexpr std::size_t max_bytes = 128;
  if (name.empty())
    return make_error_info(ec::invalid_group_name, "group name is empty");
  if (name.size() > max_bytes)
    return make_error_info(ec::invalid_group_name,
                           "group name of " + std::to_string(name.size()) +
                               " bytes exceeds the limit of 128");
  for (std::size_t i = 0; i < name.size(); ++i) {
    auto c = static_cast<unsigned char>(name[i]);
    auto ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok)
      return make_error_info(ec::invalid_group_name,
                             "group name \"" + std::string{name} + "\": byte " +
                                 std::to_string(i + 1) +
                                 " is not one of [A-Za-z0-9_-]");
  }
  return {};
}

} // namespace tb
