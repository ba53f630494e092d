#include "config/problem_lines.hpp"

#include <sstream>
#include <string_view>

namespace tb {

std::vector<std::string> problem_lines(const config_error& err) {
  std::vector<std::string> result;
  bool joining = false; // the last line was `FILE:LINE: TOML syntax error`
  std::istringstream in{err.text};
  for (std::string line; std::getline(in, line);) {
    auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line.compare(first, 5, "Hint:") == 0 ||
        line.compare(first, 3, "-->") == 0)
      continue;
    // The quote: ` 2 | x = ` and `   |     ^--- note`.
    auto bar = line.find(" |");
    if (line[first] == '|' ||
        (bar != std::string::npos &&
         line.find_first_not_of("0123456789 ") == bar + 1)) {
      auto mark =
          line.find_first_of("^~", bar == std::string::npos ? first : bar + 2);
      auto note = mark == std::string::npos
                      ? std::string::npos
                      : line.find_first_not_of("^~-", mark);
      if (note != std::string::npos && !result.empty() &&
          line.find_first_not_of(' ', note) != std::string::npos) {
        auto text = line.substr(line.find_first_not_of(' ', note));
        if (result.back().find(text) == std::string::npos)
          result.back() += " (" + text + ")";
      }
      continue;
    }
    constexpr std::string_view tag = "[error] ";
    if (line.compare(0, tag.size(), tag) == 0)
      line.erase(0, tag.size());
    // toml11 names its parser function: `toml::parse_key: ...`.
    if (line.compare(0, 6, "toml::") == 0)
      if (auto colon = line.find(": "); colon != std::string::npos)
        line.erase(0, colon + 2);
    while (!line.empty() && (line.back() == '.' || line.back() == ' '))
      line.pop_back();
    if (joining)
      result.back() += ": " + line;
    else
      result.push_back(line);
    constexpr std::string_view syntax = ": TOML syntax error";
    joining =
        !joining && line.size() >= syntax.size() &&
        line.compare(line.size() - syntax.size(), syntax.size(), syntax) == 0;
  }
  return result;
}

} // namespace tb
