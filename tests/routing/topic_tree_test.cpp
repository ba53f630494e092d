// Tests of the topic index that finds the existing topics of a new pattern.

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "routing/pattern.hpp"
#include "routing/topic_tree.hpp"

namespace {

using strings = std::vector<std::string>;

// Returns the topics of `tree` that `pattern` matches, sorted (duplicates
// kept, so tests can see a topic reported twice).
strings matches_of(const tb::topic_tree& tree, std::string_view pattern) {
  strings out;
  tree.for_each_match(
      pattern, [&out](const std::string& topic) { out.push_back(topic); });
  std::sort(out.begin(), out.end());
  return out;
}

class TopicTreeTest : public ::testing::Test {
protected:
  // Adds every topic of a typical broker.
  void SetUp() override {
    for (auto topic :
         {"orders", "orders.eu", "orders.eu.created", "orders.us.created",
          "orders.eu.west.created", "shipments.eu", "$dlq.billing",
          "$dlq.billing.x", "$sys.stats", "$sys", "a.$b"})
      ASSERT_TRUE(tree.insert(topic)) << topic;
  }

  // Returns the topics matching `pattern`, sorted.
  strings match(std::string_view pattern) const {
    return matches_of(tree, pattern);
  }

  tb::topic_tree tree;
};

// -- the set ------------------------------------------------------------------

TEST_F(TopicTreeTest, InsertReportsWhetherTheTopicIsNew) {
  EXPECT_EQ(tree.size(), 11u);
  EXPECT_FALSE(tree.insert("orders.eu"));
  EXPECT_TRUE(tree.insert("orders.eu.deleted"));
  EXPECT_EQ(tree.size(), 12u);
}

TEST_F(TopicTreeTest, PrefixOfATopicIsNotItselfATopic) {
  EXPECT_TRUE(tree.contains("orders.eu.west.created"));
  EXPECT_FALSE(tree.contains("orders.eu.west"));
  EXPECT_FALSE(tree.erase("orders.eu.west"));
  EXPECT_EQ(match("orders.eu.west"), strings{});
}

TEST_F(TopicTreeTest, EraseReportsWhetherTheTopicWasPresent) {
  EXPECT_TRUE(tree.erase("orders.eu"));
  EXPECT_FALSE(tree.erase("orders.eu"));
  EXPECT_FALSE(tree.erase("nothing.here"));
  EXPECT_FALSE(tree.contains("orders.eu"));
  EXPECT_TRUE(tree.contains("orders.eu.created"));
  EXPECT_EQ(tree.size(), 10u);
}

TEST_F(TopicTreeTest, ErasingEveryTopicPrunesEveryNode) {
  EXPECT_GT(tree.node_count(), 0u);
  for (auto topic : match(">"))
    EXPECT_TRUE(tree.erase(topic));
  for (auto topic : {"$dlq.billing", "$dlq.billing.x", "$sys.stats", "$sys"})
    EXPECT_TRUE(tree.erase(topic));
  EXPECT_EQ(tree.size(), 0u);
  EXPECT_EQ(tree.node_count(), 0u);
}

TEST_F(TopicTreeTest, EraseKeepsNodesOtherTopicsStillUse) {
  tb::topic_tree small;
  small.insert("a.b.c");
  small.insert("a.b");
  EXPECT_EQ(small.node_count(), 3u);
  EXPECT_TRUE(small.erase("a.b.c"));
  EXPECT_EQ(small.node_count(), 2u);
  EXPECT_EQ(matches_of(small, "a.>"), strings{"a.b"});
}

// -- matching -----------------------------------------------------------------

TEST_F(TopicTreeTest, LiteralPatternFindsOnlyItsTopic) {
  EXPECT_EQ(match("orders.eu"), strings{"orders.eu"});
  EXPECT_EQ(match("orders.xx"), strings{});
}

TEST_F(TopicTreeTest, PartialWildcardMatchesExactlyOneToken) {
  EXPECT_EQ(match("orders.*.created"),
            (strings{"orders.eu.created", "orders.us.created"}));
  EXPECT_EQ(match("*"), strings{"orders"});
  EXPECT_EQ(match("*.eu"), (strings{"orders.eu", "shipments.eu"}));
}

TEST_F(TopicTreeTest, FullWildcardMatchesOneOrMoreTokens) {
  EXPECT_EQ(match("orders.>"),
            (strings{"orders.eu", "orders.eu.created", "orders.eu.west.created",
                     "orders.us.created"}));
  EXPECT_EQ(match("orders.eu.>"),
            (strings{"orders.eu.created", "orders.eu.west.created"}));
}

TEST_F(TopicTreeTest, FullWildcardAloneVisitsEveryTopicButSystemTopics) {
  EXPECT_EQ(match(">"), (strings{"a.$b", "orders", "orders.eu",
                                 "orders.eu.created", "orders.eu.west.created",
                                 "orders.us.created", "shipments.eu"}));
}

TEST_F(TopicTreeTest, SystemTopicsAreVisitedOnlyByExplicitPatterns) {
  EXPECT_EQ(match("$dlq.*"), strings{"$dlq.billing"});
  EXPECT_EQ(match("$dlq.>"), (strings{"$dlq.billing", "$dlq.billing.x"}));
  EXPECT_EQ(match("$sys"), strings{"$sys"});
  EXPECT_EQ(match("*.billing"), strings{});
  EXPECT_EQ(match("*.stats"), strings{});
  EXPECT_EQ(match("*.>"), (strings{"a.$b", "orders.eu", "orders.eu.created",
                                   "orders.eu.west.created",
                                   "orders.us.created", "shipments.eu"}));
}

TEST_F(TopicTreeTest, DollarInALaterTokenIsAnOrdinaryToken) {
  EXPECT_EQ(match("a.*"), strings{"a.$b"});
  EXPECT_EQ(match("*.$b"), strings{"a.$b"});
}

// -- randomized cross-check against pattern_matches ---------------------------

// Returns a random name of 1 to 4 tokens over a small alphabet; patterns
// also get '*' anywhere and '>' last.
std::string random_name(std::mt19937& rng, bool pattern) {
  static const char* alphabet[] = {"a", "b", "c", "$sys", "$dlq", "x"};
  auto pick = [&rng](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>{0, n - 1}(rng);
  };
  auto tokens = 1 + pick(4);
  std::string result;
  for (std::size_t i = 0; i < tokens; ++i) {
    if (i > 0)
      result += '.';
    auto roll = pick(10);
    if (pattern && roll < 2)
      result += '*';
    else if (pattern && roll == 2 && i + 1 == tokens)
      result += '>';
    else
      result += alphabet[pick(std::size(alphabet))];
  }
  return result;
}

// Expects `for_each_match` to visit, once each, exactly the topics of
// `stored` that each pattern matches.
void expect_agrees_with_reference(const tb::topic_tree& tree,
                                  const std::set<std::string>& stored,
                                  const strings& patterns) {
  ASSERT_EQ(tree.size(), stored.size());
  for (const auto& pattern : patterns) {
    strings expected;
    for (const auto& topic : stored)
      if (tb::pattern_matches(pattern, topic))
        expected.push_back(topic);
    ASSERT_EQ(matches_of(tree, pattern), expected)
        << "pattern \"" << pattern << "\"";
  }
}

TEST(TopicTreeRandomTest, ForEachMatchAgreesWithReferenceBeforeAndAfterErase) {
  std::mt19937 rng{20240611};
  strings patterns;
  for (int i = 0; i < 2000; ++i) {
    patterns.push_back(random_name(rng, true));
    ASSERT_FALSE(tb::validate_pattern(patterns.back(), {}));
  }
  tb::topic_tree tree;
  std::set<std::string> stored;
  for (int i = 0; i < 1000; ++i) {
    auto topic = random_name(rng, false);
    ASSERT_EQ(tree.insert(topic), stored.insert(topic).second) << topic;
  }
  expect_agrees_with_reference(tree, stored, patterns);
  std::set<std::string> kept;
  for (const auto& topic : stored) {
    if (rng() % 2 == 0)
      ASSERT_TRUE(tree.erase(topic)) << topic;
    else
      kept.insert(topic);
  }
  for (const auto& topic : stored)
    ASSERT_EQ(tree.contains(topic), kept.count(topic) == 1) << topic;
  expect_agrees_with_reference(tree, kept, patterns);
  for (const auto& topic : kept)
    ASSERT_TRUE(tree.erase(topic));
  EXPECT_EQ(tree.size(), 0u);
  EXPECT_EQ(tree.node_count(), 0u);
}

} // namespace
