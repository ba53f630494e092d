// Tests of pattern validation and the reference matcher (spec 2).

#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "name_test_helpers.hpp"
#include "routing/pattern.hpp"

namespace {

using tb::ec;
using tb::name_limits;

const name_limits default_limits;

using tb::test::repeat_tokens;

// Expects `pattern` to pass validation under `limits`.
void expect_valid(std::string_view pattern,
                  const name_limits& limits = default_limits) {
  auto err = tb::validate_pattern(pattern, limits);
  EXPECT_FALSE(err) << "pattern \"" << pattern << "\": " << err.text;
}

// Expects `pattern` to fail with `ec::invalid_pattern` and a text containing
// `fragment`.
void expect_invalid(std::string_view pattern, std::string_view fragment,
                    const name_limits& limits = default_limits) {
  auto err = tb::validate_pattern(pattern, limits);
  EXPECT_EQ(err.code, ec::invalid_pattern) << "pattern \"" << pattern << "\"";
  EXPECT_NE(err.text.find(fragment), std::string::npos)
      << "text \"" << err.text << "\" lacks \"" << fragment << "\"";
}

// Expects `pattern` to match `topic`.
void expect_match(std::string_view pattern, std::string_view topic) {
  EXPECT_TRUE(tb::pattern_matches(pattern, topic))
      << "\"" << pattern << "\" should match \"" << topic << "\"";
}

// Expects `pattern` not to match `topic`.
void expect_no_match(std::string_view pattern, std::string_view topic) {
  EXPECT_FALSE(tb::pattern_matches(pattern, topic))
      << "\"" << pattern << "\" should not match \"" << topic << "\"";
}

// -- validation ---------------------------------------------------------------

TEST(PatternTest, ValidPatternsFromTheHeaderCommentPass) {
  for (auto pattern : {"orders.eu.created", "orders.*.created", "orders.>",
                       "*.*.created", "*", ">", "$dlq.*", "$sys.>",
                       "$dlq.billing", "orders.$eu.*", "orders.*.>", "*.>"})
    expect_valid(pattern);
}

TEST(PatternTest, EmptyPatternIsInvalid) {
  expect_invalid("", "pattern \"\" is empty");
}

TEST(PatternTest, EmptyTokenIsInvalid) {
  expect_invalid("orders..created", "pattern \"orders..created\": empty "
                                    "token 2");
  expect_invalid(".orders", "empty token 1");
  expect_invalid("orders.", "empty token 2");
  expect_invalid("orders.*.", "empty token 3");
}

TEST(PatternTest, PartialWildcardMustBeAWholeToken) {
  expect_invalid("orders.eu*", "pattern \"orders.eu*\": token 2 mixes '*' "
                               "with other characters; '*' must be a whole "
                               "token");
  expect_invalid("*a", "token 1 mixes '*'");
  expect_invalid("**", "token 1 mixes '*'");
  expect_invalid("$*", "token 1 mixes '*'");
}

TEST(PatternTest, FullWildcardMustBeAWholeToken) {
  expect_invalid("orders.e>", "token 2 mixes '>'");
  expect_invalid(">>", "token 1 mixes '>'");
  expect_invalid("$>", "token 1 mixes '>'");
}

TEST(PatternTest, FullWildcardMustBeTheLastToken) {
  expect_invalid("orders.>.created", "pattern \"orders.>.created\": token 2 "
                                     "is '>', which may only be the last "
                                     "token");
  expect_invalid(">.orders", "token 1 is '>'");
  expect_invalid(">.>", "token 1 is '>'");
}

TEST(PatternTest, SpaceAndControlCharactersAreInvalid) {
  expect_invalid("orders.e u", "token 2 contains a space");
  expect_invalid("orders.\teu", "token 2 contains a control character");
  expect_invalid("*.a\x7f", "token 2 contains a control character (0x7f)");
}

TEST(PatternTest, LimitsApplyToPatternsToo) {
  expect_valid(std::string(255, 'a'));
  expect_invalid(std::string(256, 'a'),
                 "pattern of 256 bytes exceeds the limit of 255");
  expect_valid(repeat_tokens("*", 32));
  expect_invalid(repeat_tokens("*", 33), "33 tokens exceed the limit of 32");
  name_limits small{8, 2};
  expect_valid("a.>", small);
  expect_invalid("a.*.>", "3 tokens exceed the limit of 2", small);
  expect_invalid("abcd.efgh", "9 bytes exceeds the limit of 8", small);
}

// -- matching: the examples of spec 2 -----------------------------------------

TEST(PatternTest, PartialWildcardMatchesExactlyOneToken) {
  expect_match("orders.*.created", "orders.eu.created");
  expect_match("orders.*.created", "orders.us.created");
  expect_no_match("orders.*.created", "orders.created");
  expect_no_match("orders.*.created", "orders.eu.west.created");
  expect_no_match("orders.*.created", "orders.eu.created.v2");
  expect_no_match("orders.*", "orders");
  expect_match("*", "orders");
  expect_no_match("*", "orders.eu");
}

TEST(PatternTest, FullWildcardMatchesOneOrMoreTokens) {
  expect_match("orders.>", "orders.eu");
  expect_match("orders.>", "orders.eu.created");
  expect_no_match("orders.>", "orders");
  expect_no_match("orders.>", "ordersx.eu");
  expect_no_match("orders.>", "shipments.eu");
}

TEST(PatternTest, FullWildcardAloneMatchesEveryTopicButSystemTopics) {
  for (auto topic : {"orders", "orders.eu", "a.b.c.d.e", "a.$b"})
    expect_match(">", topic);
  for (auto topic : {"$dlq.billing", "$sys.stats", "$sys", "$"})
    expect_no_match(">", topic);
}

TEST(PatternTest, RootWildcardsNeverMatchSystemTopics) {
  expect_no_match("*", "$sys");
  expect_no_match("*.billing", "$dlq.billing");
  expect_no_match("*.>", "$dlq.billing");
  expect_no_match("*.*", "$dlq.billing");
}

TEST(PatternTest, SystemTopicsMatchPatternsThatNameThem) {
  expect_match("$dlq.billing", "$dlq.billing");
  expect_match("$dlq.*", "$dlq.billing");
  expect_match("$dlq.>", "$dlq.billing");
  expect_match("$sys.>", "$sys.stats.routing");
  expect_match("$sys", "$sys");
  expect_no_match("$dlq.*", "$sys.billing");
  expect_no_match("$dlq.*", "dlq.billing");
}

TEST(PatternTest, DollarInALaterTokenIsAnOrdinaryToken) {
  expect_match("orders.*", "orders.$eu");
  expect_match("*.$eu", "orders.$eu");
  expect_match("orders.>", "orders.$eu.x");
}

TEST(PatternTest, LiteralPatternMatchesOnlyTheSameTopic) {
  expect_match("orders.eu.created", "orders.eu.created");
  expect_no_match("orders.eu", "orders.eu.created");
  expect_no_match("orders.eu.created", "orders.eu");
  expect_no_match("orders.eu", "orders.EU");
  expect_no_match("orders", "order");
}

TEST(PatternTest, WildcardsCombine) {
  expect_match("*.*.>", "a.b.c");
  expect_no_match("*.*.>", "a.b");
  expect_match("orders.*.>", "orders.eu.created.v2");
  expect_match("*.eu.*", "orders.eu.created");
}

TEST(PatternTest, IsLiteralPatternDetectsWildcardTokens) {
  EXPECT_TRUE(tb::is_literal_pattern("orders.eu.created"));
  EXPECT_TRUE(tb::is_literal_pattern("$dlq.billing"));
  EXPECT_FALSE(tb::is_literal_pattern("orders.*.created"));
  EXPECT_FALSE(tb::is_literal_pattern("orders.>"));
  EXPECT_FALSE(tb::is_literal_pattern("*"));
  EXPECT_FALSE(tb::is_literal_pattern(">"));
  EXPECT_FALSE(tb::is_literal_pattern("$dlq.*"));
}

} // namespace
