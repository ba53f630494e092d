// Tests of the pattern trie against spec 2 and the reference matcher.

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "routing/pattern.hpp"
#include "routing/sublist.hpp"

namespace {

using keys = std::vector<uint64_t>;

class SublistTest : public ::testing::Test {
protected:
  // Returns the keys matching `topic`, sorted.
  keys match(std::string_view topic) const {
    keys out;
    subs.match(topic, out);
    std::sort(out.begin(), out.end());
    return out;
  }

  // Stores each pattern in `patterns` under the key of its position + 1.
  void insert_all(std::initializer_list<const char*> patterns) {
    uint64_t key = 1;
    for (auto pattern : patterns)
      subs.insert(pattern, key++);
  }

  tb::sublist subs;
};

// -- matching -----------------------------------------------------------------

TEST_F(SublistTest, EmptySublistMatchesNothing) {
  EXPECT_TRUE(subs.empty());
  EXPECT_EQ(subs.size(), 0u);
  EXPECT_EQ(match("orders.eu"), keys{});
}

TEST_F(SublistTest, LiteralPatternMatchesOnlyItsTopic) {
  insert_all({"orders.eu.created", "orders.eu", "orders"});
  EXPECT_EQ(match("orders.eu.created"), keys{1});
  EXPECT_EQ(match("orders.eu"), keys{2});
  EXPECT_EQ(match("orders"), keys{3});
  EXPECT_EQ(match("orders.us"), keys{});
  EXPECT_EQ(match("orders.eu.created.v2"), keys{});
}

TEST_F(SublistTest, PartialWildcardMatchesExactlyOneToken) {
  insert_all({"orders.*.created", "orders.*", "*"});
  EXPECT_EQ(match("orders.eu.created"), keys{1});
  EXPECT_EQ(match("orders.eu"), keys{2});
  EXPECT_EQ(match("orders"), keys{3});
  EXPECT_EQ(match("orders.eu.west.created"), keys{});
  EXPECT_EQ(match("orders.eu.created.v2"), keys{});
}

TEST_F(SublistTest, FullWildcardMatchesOneOrMoreTokens) {
  insert_all({"orders.>"});
  EXPECT_EQ(match("orders.eu"), keys{1});
  EXPECT_EQ(match("orders.eu.created"), keys{1});
  EXPECT_EQ(match("orders"), keys{});
  EXPECT_EQ(match("shipments.eu"), keys{});
}

TEST_F(SublistTest, FullWildcardAloneMatchesEverythingButSystemTopics) {
  insert_all({">"});
  EXPECT_EQ(match("orders"), keys{1});
  EXPECT_EQ(match("orders.eu.created"), keys{1});
  EXPECT_EQ(match("orders.$eu"), keys{1});
  EXPECT_EQ(match("$dlq.billing"), keys{});
  EXPECT_EQ(match("$sys"), keys{});
}

TEST_F(SublistTest, SystemTopicsAreReachableOnlyByExplicitPatterns) {
  insert_all({"$dlq.billing", "$dlq.*", "$dlq.>", "*.billing", ">", "*.*",
              "*.>", "$sys.*"});
  EXPECT_EQ(match("$dlq.billing"), (keys{1, 2, 3}));
  EXPECT_EQ(match("$dlq.billing.x"), keys{3});
  EXPECT_EQ(match("$sys.stats"), keys{8});
  EXPECT_EQ(match("dlq.billing"), (keys{4, 5, 6, 7}));
}

TEST_F(SublistTest, DollarInALaterTokenIsAnOrdinaryToken) {
  insert_all({"orders.*", "*.$eu", "orders.$eu"});
  EXPECT_EQ(match("orders.$eu"), (keys{1, 2, 3}));
}

TEST_F(SublistTest, AllMatchingShapesContribute) {
  insert_all({"orders.eu.created", "orders.*.created", "orders.>", "*.eu.*",
              "*.*.*", ">", "orders.eu", "orders.*.*.>"});
  EXPECT_EQ(match("orders.eu.created"), (keys{1, 2, 3, 4, 5, 6}));
}

// -- keys ---------------------------------------------------------------------

TEST_F(SublistTest, DuplicatePairIsStoredOnce) {
  subs.insert("orders.*", 7);
  subs.insert("orders.*", 7);
  EXPECT_EQ(subs.size(), 1u);
  EXPECT_EQ(match("orders.eu"), keys{7});
}

TEST_F(SublistTest, SameKeyUnderTwoMatchingPatternsIsReportedPerPattern) {
  subs.insert("orders.*", 7);
  subs.insert("orders.>", 7);
  EXPECT_EQ(subs.size(), 2u);
  EXPECT_EQ(match("orders.eu"), (keys{7, 7}));
  EXPECT_EQ(match("orders.eu.x"), keys{7});
}

TEST_F(SublistTest, ManyKeysUnderOnePatternArriveInAnyOrder) {
  for (uint64_t key : {5, 3, 9, 1, 3, 7})
    subs.insert("orders.eu", key);
  EXPECT_EQ(subs.size(), 5u);
  EXPECT_EQ(match("orders.eu"), (keys{1, 3, 5, 7, 9}));
}

TEST_F(SublistTest, MatchAppendsToTheOutput) {
  subs.insert("orders.eu", 2);
  keys out{42};
  subs.match("orders.eu", out);
  EXPECT_EQ(out, (keys{42, 2}));
}

// -- erase --------------------------------------------------------------------

TEST_F(SublistTest, EraseRemovesOnlyThatPair) {
  subs.insert("orders.*", 1);
  subs.insert("orders.*", 2);
  subs.insert("orders.>", 1);
  EXPECT_TRUE(subs.erase("orders.*", 1));
  EXPECT_EQ(subs.size(), 2u);
  EXPECT_EQ(match("orders.eu"), (keys{1, 2}));
}

TEST_F(SublistTest, EraseOfAnUnknownPairReturnsFalse) {
  subs.insert("orders.*", 1);
  EXPECT_FALSE(subs.erase("orders.*", 2));
  EXPECT_FALSE(subs.erase("orders.>", 1));
  EXPECT_FALSE(subs.erase("orders", 1));
  EXPECT_FALSE(subs.erase("orders.*.x", 1));
  EXPECT_FALSE(subs.erase("$orders.*", 1));
  EXPECT_EQ(subs.size(), 1u);
}

TEST_F(SublistTest, ErasePrunesEmptyNodesButKeepsSharedPrefixes) {
  subs.insert("orders.*.created", 1);
  auto nodes_for_one = subs.node_count();
  EXPECT_EQ(nodes_for_one, 3u);
  subs.insert("orders.*.>", 2);
  subs.insert("$dlq.>", 3);
  EXPECT_EQ(subs.node_count(), 6u);
  EXPECT_TRUE(subs.erase("orders.*.>", 2));
  EXPECT_TRUE(subs.erase("$dlq.>", 3));
  EXPECT_EQ(subs.node_count(), nodes_for_one);
  EXPECT_EQ(match("orders.eu.created"), keys{1});
  EXPECT_TRUE(subs.erase("orders.*.created", 1));
  EXPECT_EQ(subs.node_count(), 0u);
  EXPECT_TRUE(subs.empty());
}

TEST_F(SublistTest, InnerNodeWithKeysSurvivesPruningOfItsChildren) {
  subs.insert("orders.*", 1);
  subs.insert("orders.*.eu", 2);
  EXPECT_TRUE(subs.erase("orders.*.eu", 2));
  EXPECT_EQ(subs.node_count(), 2u);
  EXPECT_EQ(match("orders.x"), keys{1});
}

TEST_F(SublistTest, LiteralPatternsTakeNoTrieNodes) {
  subs.insert("orders.eu.created", 1);
  subs.insert("orders.eu.created", 2);
  subs.insert("orders.eu.created", 2); // stored once
  subs.insert("$dlq.workers", 3);
  subs.insert("orders.>", 4);
  EXPECT_EQ(subs.size(), 4u);
  EXPECT_EQ(subs.literal_count(), 2u);
  EXPECT_EQ(subs.node_count(), 2u); // `orders` and its `>` only
  EXPECT_EQ(match("orders.eu.created"), (keys{1, 2, 4}));
  EXPECT_EQ(match("$dlq.workers"), keys{3});
  EXPECT_EQ(match("orders.eu"), keys{4});
  EXPECT_FALSE(subs.erase("orders.eu.created", 9));
  EXPECT_TRUE(subs.erase("orders.eu.created", 1));
  EXPECT_TRUE(subs.erase("orders.eu.created", 2));
  EXPECT_EQ(subs.literal_count(), 1u);
  EXPECT_EQ(match("orders.eu.created"), keys{4});
  EXPECT_FALSE(subs.erase("orders.eu.created", 2));
  EXPECT_EQ(subs.size(), 2u);
}

TEST_F(SublistTest, MoveLeavesTheSourceEmptyAndUsable) {
  insert_all({"orders.*", "$dlq.x"});
  tb::sublist moved{std::move(subs)};
  EXPECT_EQ(moved.size(), 2u);
  keys out;
  moved.match("$dlq.x", out);
  EXPECT_EQ(out, keys{2});
  EXPECT_TRUE(subs.empty());
  EXPECT_EQ(match("orders.eu"), keys{});
  subs.insert("a", 1);
  EXPECT_EQ(match("a"), keys{1});
}

// -- randomized cross-check against pattern_matches ---------------------------

// Generates random topics and patterns over a small token alphabet.
class name_generator {
public:
  explicit name_generator(uint32_t seed) : rng_(seed) {}

  // Returns a topic of 1 to 4 tokens.
  std::string topic() {
    return join(1 + pick(4), false);
  }

  // Returns a pattern of 1 to 4 tokens, with '*' anywhere and '>' last.
  std::string pattern() {
    return join(1 + pick(4), true);
  }

  // Returns a number in [0, n).
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>{0, n - 1}(rng_);
  }

private:
  std::string join(std::size_t tokens, bool wildcards) {
    static const char* alphabet[] = {"a", "b", "c", "$sys", "$dlq", "x"};
    std::string result;
    for (std::size_t i = 0; i < tokens; ++i) {
      if (i > 0)
        result += '.';
      auto roll = pick(10);
      if (wildcards && roll < 2)
        result += '*';
      else if (wildcards && roll == 2 && i + 1 == tokens)
        result += '>';
      else
        result += alphabet[pick(std::size(alphabet))];
    }
    return result;
  }

  std::mt19937 rng_;
};

using pair_set = std::set<std::pair<std::string, uint64_t>>;

// Expects `subs` to return, for every topic, exactly the keys of the pairs
// in `stored` whose pattern matches it.
void expect_agrees_with_reference(const tb::sublist& subs,
                                  const pair_set& stored,
                                  const std::vector<std::string>& topics) {
  ASSERT_EQ(subs.size(), stored.size());
  for (const auto& topic : topics) {
    keys expected;
    for (const auto& [pattern, key] : stored)
      if (tb::pattern_matches(pattern, topic))
        expected.push_back(key);
    keys actual;
    subs.match(topic, actual);
    std::sort(expected.begin(), expected.end());
    std::sort(actual.begin(), actual.end());
    ASSERT_EQ(actual, expected) << "topic \"" << topic << "\"";
  }
}

TEST(SublistRandomTest, MatchAgreesWithReferenceMatcherBeforeAndAfterErase) {
  name_generator gen{20240611};
  std::vector<std::string> topics;
  for (int i = 0; i < 1000; ++i)
    topics.push_back(gen.topic());
  tb::sublist subs;
  pair_set stored;
  for (int i = 0; i < 2000; ++i) {
    auto pattern = gen.pattern();
    ASSERT_FALSE(tb::validate_pattern(pattern, {})) << pattern;
    // Few keys, so keys repeat across patterns and pairs repeat exactly.
    uint64_t key = gen.pick(300);
    subs.insert(pattern, key);
    stored.emplace(pattern, key);
  }
  expect_agrees_with_reference(subs, stored, topics);
  // Erase about half of the pairs, plus pairs never stored.
  pair_set kept;
  for (const auto& [pattern, key] : stored) {
    if (gen.pick(2) == 0)
      ASSERT_TRUE(subs.erase(pattern, key)) << pattern << " " << key;
    else
      kept.emplace(pattern, key);
    ASSERT_FALSE(subs.erase(pattern, 1000 + key));
  }
  expect_agrees_with_reference(subs, kept, topics);
  for (const auto& [pattern, key] : kept)
    ASSERT_TRUE(subs.erase(pattern, key));
  EXPECT_TRUE(subs.empty());
  EXPECT_EQ(subs.node_count(), 0u);
}

} // namespace
