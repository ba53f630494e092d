// The subscribe check of token permissions: does a set of allowed patterns
// cover every topic a pattern can match?

#include "auth/pattern_cover.hpp"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "routing/pattern.hpp"

namespace {

using tb::pattern_covered;
using list = std::vector<std::string>;

TEST(PatternCover, ANarrowerAllowanceDoesNotCoverAWiderPattern) {
  EXPECT_FALSE(pattern_covered("orders.>", {"orders.eu.>"}));
  EXPECT_TRUE(pattern_covered("orders.eu.>", {"orders.eu.>"}));
  EXPECT_TRUE(pattern_covered("orders.eu.created", {"orders.eu.>"}));
  EXPECT_TRUE(pattern_covered("orders.eu.*", {"orders.eu.>"}));
  EXPECT_FALSE(pattern_covered("orders.eu", {"orders.eu.>"}));
  EXPECT_FALSE(pattern_covered("orders.*.created", {"orders.eu.*"}));
}

TEST(PatternCover, WildcardsCoverWhatTheyMatch) {
  EXPECT_TRUE(pattern_covered("a.b.c", {">"}));
  EXPECT_TRUE(pattern_covered("a.*", {"*.*"}));
  EXPECT_TRUE(pattern_covered("*.b", {"*.*"}));
  EXPECT_FALSE(pattern_covered("*.*.*", {"*.*"}));
  EXPECT_FALSE(pattern_covered("*.>", {"*.*"}));
  EXPECT_TRUE(pattern_covered("a.*.>", {"a.>"}));
  EXPECT_FALSE(pattern_covered("a.>", {"a.*.>"}));
}

TEST(PatternCover, AllowancesCoverAPatternTogether) {
  // orders.> = orders.X or orders.X.Y...
  EXPECT_TRUE(pattern_covered("orders.>", {"orders.*", "orders.*.>"}));
  EXPECT_FALSE(pattern_covered("orders.>", {"orders.*", "orders.*.*"}));
  // Literal tokens named one by one never cover a wildcard.
  EXPECT_FALSE(pattern_covered("orders.*", {"orders.eu", "orders.us"}));
}

TEST(PatternCover, RootWildcardsDoNotReachBrokerTopics) {
  EXPECT_FALSE(pattern_covered("$dlq.billing", {">"}));
  EXPECT_FALSE(pattern_covered("$dlq.>", {"*.>"}));
  EXPECT_TRUE(pattern_covered("$dlq.billing", {"$dlq.*"}));
  // '>' does not match '$' topics, so an allowance of '>' covers it.
  EXPECT_TRUE(pattern_covered(">", {">"}));
  EXPECT_TRUE(pattern_covered("*", {">"}));
}

TEST(PatternCover, NothingIsCoveredByNothing) {
  EXPECT_FALSE(pattern_covered("a", {}));
  EXPECT_FALSE(pattern_covered(">", {}));
}

// The reference: enumerate every topic over the tokens the patterns use,
// plus one no pattern names, up to two tokens longer than the longest
// pattern, and check each one the pattern matches.
bool covered_by_enumeration(const std::string& pattern, const list& allowed) {
  const list alphabet{"a", "b", "$s", "fresh"};
  size_t longest = 1;
  auto count_tokens = [](const std::string& p) {
    return static_cast<size_t>(std::count(p.begin(), p.end(), '.')) + 1;
  };
  for (auto& a : allowed)
    longest = std::max(longest, count_tokens(a));
  longest = std::max(longest, count_tokens(pattern)) + 2;
  std::vector<size_t> digits;
  for (size_t len = 1; len <= longest; ++len) {
    digits.assign(len, 0);
    while (true) {
      std::string topic;
      for (size_t i = 0; i < len; ++i)
        topic += (i == 0 ? "" : ".") + alphabet[digits[i]];
      if (tb::pattern_matches(pattern, topic)) {
        bool ok = false;
        for (auto& a : allowed)
          ok = ok || tb::pattern_matches(a, topic);
        if (!ok)
          return false;
      }
      size_t i = 0;
      while (i < len && ++digits[i] == alphabet.size())
        digits[i++] = 0;
      if (i == len)
        break;
    }
  }
  return true;
}

// A random valid pattern of 1 to 3 tokens.
std::string random_pattern(std::mt19937& rng) {
  const list tokens{"a", "b", "$s", "*", ">"};
  std::uniform_int_distribution<size_t> len_of(1, 3), token_of(0, 4);
  auto len = len_of(rng);
  std::string result;
  for (size_t i = 0; i < len; ++i) {
    auto token = tokens[token_of(rng)];
    if (token == ">" && i + 1 < len)
      token = "*"; // '>' only last
    if (token == "$s" && i > 0)
      token = "a"; // keep '$' where it matters: the first token
    result += (i == 0 ? "" : ".") + token;
  }
  return result;
}

TEST(MatchesInPlace, AgreesWithTheReferenceMatcher) {
  const list topics{"a",    "b",      "a.b",  "a.a.b",      "$s",
                    "$s.a", "$s.a.b", "b.$s", "fresh.a.b.c"};
  std::mt19937 rng{7};
  size_t matched = 0;
  for (int round = 0; round < 3000; ++round) {
    auto pattern = random_pattern(rng);
    for (auto& topic : topics) {
      auto expected = tb::pattern_matches(pattern, topic);
      ASSERT_EQ(tb::matches_in_place(pattern, topic), expected)
          << pattern << " vs " << topic;
      matched += expected ? 1 : 0;
    }
  }
  EXPECT_GT(matched, 1000u);
}

TEST(PatternCover, AgreesWithEnumerationOnRandomAllowLists) {
  std::mt19937 rng{20261203};
  std::uniform_int_distribution<size_t> size_of(0, 4);
  size_t covered = 0;
  for (int round = 0; round < 4000; ++round) {
    list allowed;
    for (size_t n = size_of(rng); n > 0; --n)
      allowed.push_back(random_pattern(rng));
    auto pattern = random_pattern(rng);
    auto expected = covered_by_enumeration(pattern, allowed);
    ASSERT_EQ(pattern_covered(pattern, allowed), expected)
        << "pattern " << pattern << " allowed "
        << ::testing::PrintToString(allowed);
    covered += expected ? 1 : 0;
  }
  // Both outcomes occur often enough for the comparison to mean something.
  EXPECT_GT(covered, 400u);
  EXPECT_LT(covered, 3600u);
}

} // namespace
