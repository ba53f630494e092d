// Tests of the values the TOML config loader reads: durations and sizes,
// the bounds a message record sets, listen addresses, declared groups
// starting from the defaults, the config's summary, overflow policy names
// and dedup windows (config_loader_test.cpp: defaults, every key, errors).

#include "config/config_loader.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/config/config_text.hpp"

namespace {

using namespace std::chrono_literals;
using tb::test::config_of;
using tb::test::defaults;
using tb::test::error_of;

TEST(config_loader, durations_and_sizes) {
  EXPECT_EQ(tb::parse_duration("250ms"), 250ms);
  EXPECT_EQ(tb::parse_duration("30s"), 30s);
  EXPECT_EQ(tb::parse_duration("2m"), 2min);
  EXPECT_EQ(tb::parse_duration("1h"), 1h);
  EXPECT_EQ(tb::parse_duration("1500"), 1500ms);
  EXPECT_EQ(tb::parse_duration("0s"), 0ms);
  EXPECT_EQ(tb::parse_duration("8760h"), 8760h);
  for (auto bad : {"", "s", "-5s", "5 s", "1.5s", "5sec", "5S", "8761h",
                   "99999999999999999999999ms"})
    EXPECT_FALSE(tb::parse_duration(bad)) << bad;
  EXPECT_EQ(tb::parse_size("123"), 123u);
  EXPECT_EQ(tb::parse_size("64KiB"), 64u << 10);
  EXPECT_EQ(tb::parse_size("3MiB"), 3u << 20);
  EXPECT_EQ(tb::parse_size("2GiB"), 2ull << 30);
  for (auto bad : {"", "KiB", "1KB", "1kib", "1 MiB", "-1", "1.5GiB",
                   "9999999999GiB", "99999999999999999999"})
    EXPECT_FALSE(tb::parse_size(bad)) << bad;
  auto cfg = config_of("shutdown_grace = 0\ntopic_idle_timeout = \"90000\"\n"
                       "[limits]\nmax_topic_bytes = \"1KiB\"\n");
  EXPECT_EQ(cfg.shutdown_grace, 0ms);
  EXPECT_EQ(cfg.topic_idle_timeout, 90s);
  EXPECT_EQ(cfg.limits.max_topic_bytes, 1024u);
}

TEST(config_loader, max_delay_and_the_topic_bound_fit_a_message_record) {
  EXPECT_EQ(defaults().limits.max_delay, 168h);
  auto cfg = config_of("[limits]\nmax_delay = \"1176h\"\n"
                       "max_topic_bytes = 65535\n");
  EXPECT_EQ(cfg.limits.max_delay, 1176h);
  EXPECT_EQ(cfg.limits.max_topic_bytes, 65535u);
  auto text = error_of("[limits]\nmax_delay = \"1177h\"\n"
                       "max_topic_bytes = \"64KiB\"\n");
  EXPECT_NE(text.find("limits.max_delay"), std::string::npos) << text;
  EXPECT_NE(text.find("at most 49 days"), std::string::npos) << text;
  EXPECT_NE(text.find("limits.max_topic_bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("from 1 to 65535"), std::string::npos) << text;
}

TEST(config_loader, listen_addresses) {
  for (auto ok : {"127.0.0.1:7400", "0.0.0.0:0", "[::1]:7400", "[::]:65535",
                  "localhost:1", "broker.example.com:7400"})
    EXPECT_EQ(tb::check_listen_address(ok), "") << ok;
  for (auto bad : {"", "localhost", ":7400", "h:", "h:x", "h:65536", "::1:7400",
                   "[::1]", "a b:1", "h:-1", "h:1 "})
    EXPECT_NE(tb::check_listen_address(bad), "") << bad;
}

TEST(config_loader, declared_groups_start_from_the_defaults) {
  // The defaults come after the group in the file and still apply.
  auto cfg = config_of(R"(
[groups.a]
pattern = "a.*"
max_deliveries = 9
[groups.b]
pattern = "b.>"
[groups.defaults]
ack_wait = "5s"
max_deliveries = 2
policy = "key_hash"
)");
  ASSERT_EQ(cfg.groups.size(), 2u);
  auto want_a = cfg.group_defaults;
  want_a.pattern = "a.*";
  want_a.max_deliveries = 9;
  EXPECT_EQ(cfg.groups["a"], want_a);
  EXPECT_EQ(cfg.groups["b"].max_deliveries, 2u);
  EXPECT_EQ(cfg.groups["b"].policy, "key_hash");
  EXPECT_EQ(cfg.groups["b"].ack_wait, 5s);
  // toml11 keeps tables in a hash map, whose order is neither the file's
  // nor fixed: try the defaults first and last, among many groups.
  std::string many, defaults = "[groups.defaults]\nack_wait = \"7s\"\n";
  for (int i = 0; i < 32; ++i)
    many += "[groups.g" + std::to_string(i) + "]\npattern = \"g\"\n";
  for (const auto& text : {many + defaults, defaults + many}) {
    cfg = config_of(text);
    ASSERT_EQ(cfg.groups.size(), 32u);
    for (const auto& [name, g] : cfg.groups)
      EXPECT_EQ(g.ack_wait, 7s) << name;
  }
}

TEST(config_loader, describe_summarizes_the_config) {
  auto cfg = config_of("[groups.w]\npattern = \"w.>\"\nack_wait = \"90s\"\n");
  auto text = describe(cfg);
  EXPECT_NE(text.find("config t.toml: listen 127.0.0.1:7400"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1MiB/message"), std::string::npos) << text;
  EXPECT_NE(text.find("group w: pattern w.>, ack_wait 90s"), std::string::npos)
      << text;
  EXPECT_NE(text.find("group defaults: pattern -, ack_wait 30s"),
            std::string::npos)
      << text;
}

TEST(config_loader, overflow_policy_names) {
  tb::overflow_policy x = tb::overflow_policy::reject;
  EXPECT_TRUE(from_string("drop_oldest", x));
  EXPECT_EQ(x, tb::overflow_policy::drop_oldest);
  EXPECT_EQ(to_string(x), "drop_oldest");
  EXPECT_FALSE(from_string("Reject", x));
  EXPECT_EQ(x, tb::overflow_policy::drop_oldest);
  EXPECT_EQ(to_string(tb::overflow_policy::reject), "reject");
}

TEST(config_loader, dedup_window_and_max_ids) {
  auto cfg = config_of("[dedup]\nwindow = \"10m\"\nmax_ids = 5000\n");
  EXPECT_EQ(cfg.dedup.window, std::chrono::minutes(10));
  EXPECT_EQ(cfg.dedup.max_ids, 5000u);
  EXPECT_EQ(defaults().dedup.window, std::chrono::minutes(2));
  EXPECT_EQ(defaults().dedup.max_ids, 1'000'000u);
}

TEST(config_loader, group_dedup_window_overrides_per_group) {
  auto cfg = config_of("[groups.defaults]\ndedup_window = \"5m\"\n"
                       "[groups.g]\npattern = \"a.>\"\n"
                       "dedup_window = \"1h\"\n"
                       "[groups.h]\npattern = \"b.>\"\n");
  EXPECT_EQ(cfg.groups.at("g").dedup_window, std::chrono::hours(1));
  EXPECT_EQ(cfg.groups.at("h").dedup_window, std::chrono::minutes(5));
  EXPECT_EQ(defaults().group_defaults.dedup_window.count(), 0);
}

} // namespace
