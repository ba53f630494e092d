#include "auth/pattern_cover.hpp"

#include <algorithm>

#include "routing/topic.hpp"

namespace tb {

namespace {

using tokens = std::vector<std::string_view>;

// The allowed patterns still in play, split into tokens.
using candidates = std::vector<const tokens*>;

// Returns true if every topic matched by `pattern[pos..]` (after a prefix
// every candidate matched) is matched by one of `alive`.
bool covered_from(const tokens& pattern, size_t pos, const candidates& alive) {
  if (alive.empty())
    return false;
  if (pos == pattern.size()) {
    // The topic ends here: a candidate must end here too.
    return std::any_of(alive.begin(), alive.end(),
                       [&](const tokens* a) { return a->size() == pos; });
  }
  // A candidate with '>' here matches any rest of one token or more, and
  // the pattern has at least one token left. At the first position it only
  // matches topics that do not start with '$'.
  auto& head = pattern[pos];
  bool system_head = pos == 0 && !head.empty() && head[0] == '$';
  for (auto* a : alive)
    if (a->size() > pos && (*a)[pos] == ">" && !system_head)
      return true;
  if (head == ">") {
    // '>' is the last token: one or more tokens of any value.
    size_t longest = 0;
    for (auto* a : alive)
      longest = std::max(longest, a->size());
    tokens expanded{pattern.begin(), pattern.begin() + pos};
    for (size_t extra = 1; pos + extra <= longest + 1; ++extra) {
      expanded.push_back("*");
      if (!covered_from(expanded, pos, alive))
        return false;
    }
    return true;
  }
  candidates next;
  for (auto* a : alive) {
    if (a->size() <= pos)
      continue;
    auto& token = (*a)[pos];
    // A literal pattern token is matched by the same literal or by '*'
    // ('*' at the first position does not match a '$' token); a '*' in the
    // pattern is covered only by '*' (a fresh token is the hardest case).
    bool keep = head == "*" ? token == "*"
                            : token == head || (token == "*" && !system_head);
    if (keep)
      next.push_back(a);
  }
  return covered_from(pattern, pos + 1, next);
}

} // namespace

bool matches_in_place(std::string_view pattern, std::string_view topic) {
  constexpr auto npos = std::string_view::npos;
  // Root wildcards do not match broker topics.
  bool system = !topic.empty() && topic[0] == '$';
  size_t p = 0;
  size_t t = 0; // npos once the topic has no token left
  for (bool first = true;; first = false) {
    auto p_end = pattern.find('.', p);
    auto p_token = pattern.substr(p, p_end == npos ? npos : p_end - p);
    if (p_token == ">")
      return t != npos && !(first && system); // one or more tokens left
    if (t == npos)
      return false;
    auto t_end = topic.find('.', t);
    auto t_token = topic.substr(t, t_end == npos ? npos : t_end - t);
    if (p_token == "*") {
      if (first && system)
        return false;
    } else if (p_token != t_token) {
      return false;
    }
    if (p_end == npos)
      return t_end == npos;
    p = p_end + 1;
    t = t_end == npos ? npos : t_end + 1;
  }
}

bool pattern_covered(std::string_view pattern,
                     const std::vector<std::string>& allowed) {
  tokens wanted;
  split_tokens(pattern, wanted);
  std::vector<tokens> split(allowed.size());
  candidates alive;
  alive.reserve(allowed.size());
  for (size_t i = 0; i < allowed.size(); ++i) {
    split_tokens(allowed[i], split[i]);
    alive.push_back(&split[i]);
  }
  return covered_from(wanted, 0, alive);
}

} // namespace tb
