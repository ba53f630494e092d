// Tests of the group checks in the config loader (spec 6, 9): every bad
// group setting is found before the broker starts, each reported once, at
// its file, line and key, with all problems of a file listed together.

#include "config/config_loader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

// The policies the tests know, as the broker's registry would list them.
const tb::policy_names known_policies{
    [](const std::string& x) { return x == "round_robin" || x == "key_hash"; },
    "key_hash, round_robin"};

// Loads `text` as "t.toml" with `known_policies`; returns its error text
// and fails if it loads.
std::string error_of(const std::string& text) {
  auto res = tb::load_config_string(text, "t.toml", known_policies);
  EXPECT_FALSE(res.ok()) << "loaded:\n" << text;
  return res.ok() ? std::string{} : res.error().text;
}

// Returns how often `needle` occurs in `text`.
size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (auto i = text.find(needle); i != std::string::npos;
       i = text.find(needle, i + 1))
    ++n;
  return n;
}

TEST(group_config, every_bad_group_is_listed_with_line_and_key) {
  auto err = error_of("[groups.a]\n"              // 1
                      "pattern = \"a.>\"\n"       // 2
                      "policy = \"nope\"\n"       // 3
                      "[groups.b]\n"              // 4
                      "pattern = \"b..x\"\n"      // 5
                      "[groups.c]\n"              // 6
                      "pattern = \"c.>\"\n"       // 7
                      "dead_letter = \"c d\"\n"); // 8
  EXPECT_NE(err.find("t.toml:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("groups.a.policy: unknown policy \"nope\" (known: "
                     "key_hash, round_robin)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("t.toml:5:"), std::string::npos) << err;
  EXPECT_NE(err.find("groups.b.pattern:"), std::string::npos) << err;
  EXPECT_NE(err.find("t.toml:8:"), std::string::npos) << err;
  EXPECT_NE(err.find("groups.c.dead_letter:"), std::string::npos) << err;
  // In file order, and no name said twice in one message.
  EXPECT_LT(err.find("t.toml:3:"), err.find("t.toml:5:"));
  EXPECT_LT(err.find("t.toml:5:"), err.find("t.toml:8:"));
  EXPECT_EQ(count(err, "group \"a\""), 0u) << err;
}

TEST(group_config,
     a_dead_letter_topic_the_groups_own_pattern_matches_is_refused) {
  auto err = error_of("[groups.y]\n"
                      "pattern = \"y.>\"\n"
                      "dead_letter = \"y.dead\"\n");
  EXPECT_NE(err.find("t.toml:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("groups.y.dead_letter:"), std::string::npos) << err;
  EXPECT_NE(err.find("\"y.dead\""), std::string::npos) << err;
  EXPECT_NE(err.find("\"y.>\""), std::string::npos) << err;
}

TEST(group_config, the_default_dead_letter_topic_counts_too) {
  // "$dlq.>" matches "$dlq.audit", the group's own dead letter topic.
  auto err = error_of("[groups.audit]\npattern = \"$dlq.>\"\n");
  EXPECT_NE(err.find("groups.audit:"), std::string::npos) << err;
  EXPECT_NE(err.find("$dlq.audit"), std::string::npos) << err;
  EXPECT_TRUE(tb::load_config_string(
                  "[groups.audit]\npattern = \"$dlq.>\"\ndead_letter = "
                  "\"none\"\n",
                  "t.toml", known_policies)
                  .ok());
}

TEST(group_config, an_inherited_dead_letter_loop_points_at_the_group) {
  auto err = error_of("[groups.defaults]\n"
                      "dead_letter = \"y.dead\"\n"
                      "[groups.fine]\n"
                      "pattern = \"x.>\"\n"
                      "[groups.y]\n"
                      "pattern = \"y.>\"\n");
  EXPECT_NE(err.find("groups.y:"), std::string::npos) << err;
  EXPECT_EQ(err.find("groups.fine"), std::string::npos) << err;
}

TEST(group_config, a_bad_default_is_reported_once_not_per_group) {
  auto err = error_of("[groups.defaults]\n"
                      "policy = \"nope\"\n"
                      "[groups.a]\npattern = \"a\"\n"
                      "[groups.b]\npattern = \"b\"\n");
  EXPECT_EQ(count(err, "[error]"), 1u) << err;
  EXPECT_NE(err.find("groups.defaults.policy"), std::string::npos) << err;
}

TEST(group_config, patterns_are_checked_against_the_configured_limits) {
  auto err = error_of("[limits]\nmax_topic_tokens = 2\n"
                      "[groups.a]\npattern = \"a.b.c\"\n");
  EXPECT_NE(err.find("groups.a.pattern"), std::string::npos) << err;
}

TEST(group_config, more_declared_groups_than_max_groups_is_an_error) {
  auto err = error_of("[limits]\nmax_groups = 2\n"
                      "[groups.a]\npattern = \"a\"\n"
                      "[groups.b]\npattern = \"b\"\n"
                      "[groups.c]\npattern = \"c\"\n");
  EXPECT_NE(err.find("3 groups are declared; expected at most "
                     "limits.max_groups = 2 groups"),
            std::string::npos)
      << err;
}

TEST(group_config, without_a_policy_list_any_policy_name_passes) {
  // Programs that register their own policies pass their registry; the
  // loader alone cannot know them.
  auto res = tb::load_config_string("[groups.a]\npattern = \"a\"\n"
                                    "policy = \"priority_first\"\n",
                                    "t.toml");
  EXPECT_TRUE(res.ok()) << res.error().text;
}

} // namespace

namespace {

TEST(group_config, max_age_on_expiry_and_max_priority_are_read_and_checked) {
  auto res = tb::load_config_string("[groups.defaults]\nmax_age = \"90s\"\n"
                                    "[groups.a]\npattern = \"a.>\"\n"
                                    "on_expiry = \"drop\"\nmax_priority = 3\n",
                                    "t.toml", known_policies);
  ASSERT_TRUE(res.ok()) << res.error().text;
  auto& a = res.value().groups.at("a");
  EXPECT_EQ(a.max_age, std::chrono::seconds{90});
  EXPECT_EQ(a.on_expiry, tb::expiry_action::drop);
  EXPECT_EQ(a.max_priority, 3);
  EXPECT_EQ(res.value().group_defaults.on_expiry,
            tb::expiry_action::dead_letter);
  EXPECT_EQ(res.value().group_defaults.max_priority, 9);
  auto err = error_of("[groups.b]\npattern = \"b\"\non_expiry = \"keep\"\n"
                      "max_priority = 10\nmax_age = \"soon\"\n");
  EXPECT_NE(err.find("groups.b.on_expiry"), std::string::npos) << err;
  EXPECT_NE(err.find("\"dead_letter\" or \"drop\""), std::string::npos) << err;
  EXPECT_NE(err.find("groups.b.max_priority"), std::string::npos) << err;
  EXPECT_NE(err.find("from 1 to 9"), std::string::npos) << err;
  EXPECT_NE(err.find("groups.b.max_age"), std::string::npos) << err;
}

} // namespace
