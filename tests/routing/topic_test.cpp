// Tests of topic validation, tokenising and the `$` space (spec 2).

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "name_test_helpers.hpp"
#include "routing/topic.hpp"

namespace {

using tb::ec;
using tb::name_limits;

const name_limits default_limits;

using tb::test::repeat_tokens;

// Expects `topic` to pass validation under `limits`.
void expect_valid(std::string_view topic,
                  const name_limits& limits = default_limits) {
  auto err = tb::validate_topic(topic, limits);
  EXPECT_FALSE(err) << "topic \"" << topic << "\": " << err.text;
  EXPECT_EQ(err.code, ec::none);
}

// Expects `topic` to fail with `ec::invalid_topic` and a text containing
// `fragment`.
void expect_invalid(std::string_view topic, std::string_view fragment,
                    const name_limits& limits = default_limits) {
  auto err = tb::validate_topic(topic, limits);
  EXPECT_EQ(err.code, ec::invalid_topic) << "topic \"" << topic << "\"";
  EXPECT_NE(err.text.find(fragment), std::string::npos)
      << "text \"" << err.text << "\" lacks \"" << fragment << "\"";
}

// Returns the tokens of `s` as strings.
std::vector<std::string> tokens_of(std::string_view s) {
  std::vector<std::string_view> views;
  tb::split_tokens(s, views);
  return {views.begin(), views.end()};
}

using strings = std::vector<std::string>;

// -- valid topics -------------------------------------------------------------

TEST(TopicTest, TokensJoinedByDotsAreValid) {
  for (auto topic : {"orders", "orders.eu.created", "a.b.c.d", "A-b_c.9",
                     "orders.eu-west-1.created"})
    expect_valid(topic);
}

TEST(TopicTest, BrokerTopicsAreSyntacticallyValid) {
  // Publishing to them is a permission question, decided elsewhere.
  for (auto topic : {"$dlq.billing", "$sys.stats", "$", "a.$b"})
    expect_valid(topic);
}

TEST(TopicTest, NonAsciiBytesAreAllowedInTokens) {
  expect_valid("bestellungen.m\xc3\xbcnchen");
}

TEST(TopicTest, ValidTopicCarriesNoErrorText) {
  auto err = tb::validate_topic("orders.eu", default_limits);
  EXPECT_FALSE(err);
  EXPECT_TRUE(err.text.empty());
}

// -- token rules --------------------------------------------------------------

TEST(TopicTest, EmptyTopicIsInvalid) {
  expect_invalid("", "topic \"\" is empty");
}

TEST(TopicTest, EmptyTokenIsNamedByItsPosition) {
  expect_invalid("a..b", "topic \"a..b\": empty token 2");
  expect_invalid(".a", "topic \".a\": empty token 1");
  expect_invalid("a.", "topic \"a.\": empty token 2");
  expect_invalid(".", "empty token 1");
}

TEST(TopicTest, SpaceInTokenIsInvalid) {
  expect_invalid("a b", "topic \"a b\": token 1 contains a space");
  expect_invalid("orders.eu west", "token 2 contains a space");
  expect_invalid(" ", "token 1 contains a space");
}

TEST(TopicTest, WhitespaceAndControlCharactersAreInvalid) {
  for (char ch : {'\t', '\n', '\v', '\f', '\r', '\x01', '\x1f', '\x7f'}) {
    auto topic = std::string{"a.b"} + ch;
    expect_invalid(topic, "token 2 contains a control character");
  }
  expect_invalid(std::string_view{"a\0b", 3}, "contains a control character");
}

TEST(TopicTest, ErrorTextEscapesControlCharacters) {
  auto err = tb::validate_topic("a\tb", default_limits);
  EXPECT_EQ(err.text, "topic \"a\\x09b\": token 1 contains a control "
                      "character (0x09)");
}

TEST(TopicTest, WildcardTokenIsRefusedBecausePublishNeedsALiteralTopic) {
  expect_invalid("x.*", "topic \"x.*\": token 2 is a wildcard; publish needs a "
                        "literal topic");
  expect_invalid("x.>", "token 2 is a wildcard");
  expect_invalid("*", "token 1 is a wildcard");
  expect_invalid(">", "token 1 is a wildcard");
}

TEST(TopicTest, WildcardCharacterInsideTokenIsInvalid) {
  expect_invalid("a*", "token 1 contains '*'");
  expect_invalid("a.b>c", "token 2 contains '>'");
  expect_invalid("$*", "token 1 contains '*'");
}

TEST(TopicTest, FirstProblemIsReported) {
  expect_invalid("a b..c*", "token 1 contains a space");
}

// -- limits -------------------------------------------------------------------

TEST(TopicTest, DefaultLimitsAre255BytesAnd32Tokens) {
  name_limits limits;
  EXPECT_EQ(limits.max_bytes, 255u);
  EXPECT_EQ(limits.max_tokens, 32u);
}

TEST(TopicTest, TopicOfExactly255BytesIsValid) {
  expect_valid(std::string(255, 'a'));
}

TEST(TopicTest, TopicOver255BytesIsInvalidAndNamesItsSize) {
  expect_invalid(std::string(256, 'a'),
                 "topic of 256 bytes exceeds the limit of 255");
  auto err = tb::validate_topic(std::string(300, 'a'), default_limits);
  EXPECT_EQ(err.text, "topic of 300 bytes exceeds the limit of 255");
}

TEST(TopicTest, TopicOf32TokensIsValid) {
  expect_valid(repeat_tokens("a", 32));
}

TEST(TopicTest, TopicOf33TokensIsInvalidAndNamesTheLimit) {
  expect_invalid(repeat_tokens("a", 33), "33 tokens exceed the limit of 32");
}

TEST(TopicTest, LimitsAreConfigurable) {
  name_limits small{10, 3};
  expect_valid("a.b.c", small);
  expect_valid("abcde.fghi", small);
  expect_invalid("a.b.c.d", "4 tokens exceed the limit of 3", small);
  expect_invalid("abcde.fghij", "11 bytes exceeds the limit of 10", small);
  name_limits large{1000, 100};
  expect_valid(repeat_tokens("ab", 100), large);
  expect_invalid(repeat_tokens("ab", 33), "exceed the limit of 32");
}

// -- system topics ------------------------------------------------------------

TEST(TopicTest, FirstTokenStartingWithDollarIsASystemTopic) {
  EXPECT_TRUE(tb::is_system_topic("$dlq.billing"));
  EXPECT_TRUE(tb::is_system_topic("$sys.stats.x"));
  EXPECT_TRUE(tb::is_system_topic("$sys"));
  EXPECT_TRUE(tb::is_system_topic("$"));
}

TEST(TopicTest, DollarElsewhereDoesNotMakeASystemTopic) {
  EXPECT_FALSE(tb::is_system_topic("orders.$dlq"));
  EXPECT_FALSE(tb::is_system_topic("sys$.x"));
  EXPECT_FALSE(tb::is_system_topic(""));
  EXPECT_FALSE(tb::is_system_topic("*.x"));
}

// -- split_tokens -------------------------------------------------------------

TEST(TopicTest, SplitTokensCutsAtEveryDot) {
  EXPECT_EQ(tokens_of("orders.eu.created"),
            (strings{"orders", "eu", "created"}));
  EXPECT_EQ(tokens_of("orders"), (strings{"orders"}));
  EXPECT_EQ(tokens_of("a..b."), (strings{"a", "", "b", ""}));
  EXPECT_EQ(tokens_of(""), (strings{""}));
}

TEST(TopicTest, SplitTokensClearsTheOutputFirst) {
  std::vector<std::string_view> out{"stale", "views"};
  tb::split_tokens("a.b", out);
  EXPECT_EQ(out, (std::vector<std::string_view>{"a", "b"}));
}

} // namespace
