// libFuzzer target: topic and pattern parsing, and the two tries.
//
// The input is lines ('\n'). Each line is validated as a topic, a pattern
// and a group name, and the validators must agree with each other. The
// valid patterns go into a `sublist` and the valid topics into a
// `topic_tree`; both tries must answer exactly what the reference matcher
// `pattern_matches` answers, and must be empty again after every entry was
// erased. Any disagreement aborts, so libFuzzer reports it as a crash.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "routing/pattern.hpp"
#include "routing/sublist.hpp"
#include "routing/topic.hpp"
#include "routing/topic_tree.hpp"

namespace {

// The most patterns and topics one input puts in the tries.
constexpr size_t max_entries = 64;

// Aborts with `what` and the offending names if `ok` is false.
void check(bool ok, const char* what, std::string_view a = {},
           std::string_view b = {}) {
  if (ok)
    return;
  std::fprintf(stderr, "fuzz_topic: %s [%.*s] [%.*s]\n", what,
               static_cast<int>(a.size()), a.data(), static_cast<int>(b.size()),
               b.data());
  std::abort();
}

// Checks that one name gets consistent answers from every validator.
void check_name(std::string_view name, const tb::name_limits& limits,
                const tb::name_limits& tight) {
  auto topic_err = tb::validate_topic(name, limits);
  auto pattern_err = tb::validate_pattern(name, limits);
  check(!topic_err || topic_err.code == tb::ec::invalid_topic,
        "topic error code", name);
  check(!pattern_err || pattern_err.code == tb::ec::invalid_pattern,
        "pattern error code", name);
  check(!topic_err || !topic_err.text.empty(), "empty topic error", name);
  check(!pattern_err || !pattern_err.text.empty(), "empty pattern error", name);
  if (!topic_err) {
    check(!pattern_err, "a valid topic is an invalid pattern", name);
    check(tb::is_literal_pattern(name), "a topic is not literal", name);
  }
  if (!pattern_err && tb::is_literal_pattern(name))
    check(!topic_err, "a literal pattern is an invalid topic", name);
  // Tighter limits never accept more.
  if (!tb::validate_pattern(name, tight))
    check(!pattern_err, "tight limits accept more", name);
  // Splitting and joining gives the name back.
  std::vector<std::string_view> tokens;
  tb::split_tokens(name, tokens);
  check(tokens.size() ==
            static_cast<size_t>(std::count(name.begin(), name.end(), '.')) + 1,
        "token count", name);
  std::string joined;
  for (size_t i = 0; i < tokens.size(); ++i)
    joined.append(i == 0 ? "" : ".").append(tokens[i]);
  check(joined == name, "split and join differ", name);
  auto group_err = tb::validate_group_name(name);
  check(!group_err || group_err.code == tb::ec::invalid_group_name,
        "group error code", name);
}

// Checks both tries against the reference matcher, then empties them.
void check_tries(const std::vector<std::string>& patterns,
                 const std::vector<std::string>& topics) {
  tb::sublist subs;
  for (size_t key = 0; key < patterns.size(); ++key)
    subs.insert(patterns[key], key);
  check(subs.size() == patterns.size(), "sublist size");
  tb::topic_tree tree;
  std::set<std::string> distinct(topics.begin(), topics.end());
  for (auto& topic : topics)
    tree.insert(topic);
  check(tree.size() == distinct.size(), "topic_tree size");
  std::vector<uint64_t> keys;
  for (auto& topic : distinct) {
    check(tree.contains(topic), "topic_tree lost a topic", topic);
    keys.clear();
    subs.match(topic, keys);
    std::sort(keys.begin(), keys.end());
    std::vector<uint64_t> expected;
    for (size_t key = 0; key < patterns.size(); ++key)
      if (tb::pattern_matches(patterns[key], topic))
        expected.push_back(key);
    check(keys == expected, "sublist disagrees", topic);
  }
  for (auto& pattern : patterns) {
    std::set<std::string> found;
    tree.for_each_match(pattern, [&](const std::string& topic) {
      check(found.insert(topic).second, "topic_tree repeats", pattern, topic);
    });
    for (auto& topic : distinct)
      check(found.count(topic) == (tb::pattern_matches(pattern, topic) ? 1 : 0),
            "topic_tree disagrees", pattern, topic);
    auto head = std::string_view(pattern).substr(0, pattern.find('.'));
    if (head == "*" || head == ">")
      for (auto& topic : found)
        check(!tb::is_system_topic(topic), "a root wildcard matched a $ topic",
              pattern, topic);
  }
  for (size_t key = 0; key < patterns.size(); ++key)
    check(subs.erase(patterns[key], key), "sublist erase", patterns[key]);
  check(subs.empty() && subs.node_count() == 0, "sublist not empty");
  for (auto& topic : distinct)
    check(tree.erase(topic), "topic_tree erase", topic);
  check(tree.size() == 0 && tree.node_count() == 0, "topic_tree not empty");
}

} // namespace

/// libFuzzer's entry point: checks every line of `data` as described above.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tb::name_limits limits;
  const tb::name_limits tight{16, 4};
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> patterns;
  std::vector<std::string> topics;
  size_t start = 0;
  while (start <= input.size()) {
    auto end = input.find('\n', start);
    if (end == std::string_view::npos)
      end = input.size();
    auto line = input.substr(start, end - start);
    start = end + 1;
    check_name(line, limits, tight);
    if (!tb::validate_pattern(line, limits) && patterns.size() < max_entries)
      patterns.emplace_back(line);
    if (!tb::validate_topic(line, limits) && topics.size() < max_entries)
      topics.emplace_back(line);
  }
  check_tries(patterns, topics);
  return 0;
}
