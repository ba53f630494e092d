// Tests of the TOML config loader: defaults, every key, every kind of error
// (with key path, line and expectation), unknown keys, syntax errors
// (config_values_test.cpp: units, limits, listen addresses, group defaults,
// dedup; config_files_test.cpp: files, the docs' examples, command-line
// flags).

#include "config/config_loader.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/config/config_text.hpp"

namespace {

using namespace std::chrono_literals;
using tb::broker_config;
using tb::test::config_of;
using tb::test::defaults;
using tb::test::error_of;

TEST(config_loader, empty_text_gives_the_builtin_defaults) {
  EXPECT_EQ(config_of(""), defaults());
  EXPECT_EQ(config_of("# only a comment\n\n"), defaults());
  broker_config cfg;
  EXPECT_EQ(cfg.source, "built-in defaults");
  EXPECT_EQ(cfg.listen, "127.0.0.1:7400");
  EXPECT_EQ(cfg.group_defaults.ack_wait, 30s);
  EXPECT_EQ(cfg.limits.max_message_bytes, 1u << 20);
  EXPECT_EQ(cfg.scheduler, "handoff");
}

TEST(config_loader, every_scheduler_is_accepted) {
  for (const char* name : {"handoff", "sharing", "stealing"})
    EXPECT_EQ(config_of(std::string{"scheduler = \""} + name + "\"").scheduler,
              name);
}

TEST(config_loader, every_key_is_read) {
  auto cfg = config_of(R"(
listen = "0.0.0.0:9000"
log_level = "debug"
log_format = "json"
log_summary_interval = "5m"
shutdown_grace = "250ms"
topic_idle_timeout = "2m"
worker_threads = 3
scheduler = "stealing"
[limits]
max_message_bytes = "2MiB"
max_topic_bytes = 100
max_topic_tokens = 8
max_publish_batch = 10
max_subscribe_batch = 20
subscription_buffer = 11
max_subscriptions_per_session = 12
max_session_buffered_bytes = "1GiB"
max_in_flight_per_session = 13
max_frame_messages = 14
max_sessions = 17
max_groups = 18
max_topics = 19
max_pending_requests_per_session = 21
[observability]
health_service = false
reflection = false
[metrics]
listen = "127.0.0.1:9100"
per_topic = true
[groups]
auto_create = false
[groups.defaults]
ack_wait = "1h"
max_deliveries = 0
max_pending_messages = 15
max_pending_bytes = "64KiB"
overflow = "drop_oldest"
dead_letter = "none"
policy = "key_hash"
[groups.orders-workers]
pattern = "orders.>"
ack_wait = 1500
max_deliveries = 7
max_pending_messages = 16
max_pending_bytes = 4096
overflow = "reject"
dead_letter = "$dlq.orders"
policy = "round_robin"
)");
  auto want = defaults();
  want.listen = "0.0.0.0:9000";
  want.log_level = "debug";
  want.log_format = "json";
  want.log_summary_interval = 5min;
  want.shutdown_grace = 250ms;
  want.topic_idle_timeout = 2min;
  want.worker_threads = 3;
  want.scheduler = "stealing";
  want.limits = {2u << 20, 100, 8,  10, 20, 11, 12,
                 1u << 30, 13,  14, 17, 18, 19};
  want.limits.max_pending_requests_per_session = 21;
  want.health_service = false;
  want.reflection = false;
  want.metrics = {"127.0.0.1:9100", true};
  want.auto_create_groups = false;
  want.group_defaults = {"",     1h,        0,
                         15,     64 * 1024, tb::overflow_policy::drop_oldest,
                         "none", "key_hash"};
  want.groups["orders-workers"] = {
      "orders.>",    1500ms,       7, 16, 4096, tb::overflow_policy::reject,
      "$dlq.orders", "round_robin"};
  EXPECT_EQ(cfg, want) << describe(cfg);
}

// One bad input and what its error must say.
struct error_case {
  const char* toml;
  const char* where; // "t.toml:LINE:" of the offending value
  const char* path;  // the dotted key
  const char* expected;
};

TEST(config_loader, each_kind_of_error_names_key_line_and_expectation) {
  const error_case cases[] = {
      {"listen = 7400", "t.toml:1:", "listen:", "expected HOST:PORT"},
      {"listen = \"localhost\"", "t.toml:1:", "listen:", "expected HOST:PORT"},
      {"listen = \"::1:7400\"", "t.toml:1:", "listen:", "IPv6 hosts in brack"},
      {"listen = \"h:70000\"", "t.toml:1:", "listen:", "from 0 to 65535"},
      {"\nlog_level = \"loud\"", "t.toml:2:", "log_level: got \"loud\"",
       "expected \"trace\", \"debug\""},
      {"log_format = \"xml\"", "t.toml:1:", "log_format: got \"xml\"",
       "expected \"text\" or \"json\""},
      {"log_summary_interval = \"soon\"",
       "t.toml:1:", "log_summary_interval:", "or \"off\" (also \"0s\")"},
      {"log_summary_interval = true", "t.toml:1:", "got a boolean",
       "a duration"},
      {"shutdown_grace = \"5 s\"",
       "t.toml:1:", "shutdown_grace:", "expected a duration of at most 8760h"},
      {"topic_idle_timeout = \"0s\"",
       "t.toml:1:", "topic_idle_timeout:", "expected a duration > 0"},
      {"shutdown_grace = \"-5s\"", "t.toml:1:", "shutdown_grace:", "duration"},
      {"shutdown_grace = 1.5", "t.toml:1:", "got a floating", "duration"},
      {"shutdown_grace = \"8761h\"", "t.toml:1:", "shutdown_grace:", "8760h"},
      {"worker_threads = -1", "t.toml:1:", "worker_threads: got -1",
       "expected an integer from 0 to 1024"},
      {"worker_threads = true", "t.toml:1:", "got a boolean", "0 to 1024"},
      {"scheduler = \"fast\"", "t.toml:1:", "scheduler: got \"fast\"",
       "expected \"handoff\", \"sharing\" or \"stealing\""},
      {"limits = 5", "t.toml:1:", "limits: got 5", "expected a table"},
      {"[limits]\nmax_publish_batch = 0", "t.toml:2:",
       "limits.max_publish_batch: got 0", "expected an integer from 1"},
      {"[limits]\nmax_subscribe_batch = 0", "t.toml:2:",
       "limits.max_subscribe_batch: got 0", "expected an integer from 1"},
      {"[limits]\nmax_message_bytes = \"1MB\"", "t.toml:2:",
       "limits.max_message_bytes: got \"1MB\"", "expected a size > 0"},
      {"[limits]\nmax_message_bytes = 99999999999999999999",
       "t.toml:2:", "limits.max_message_bytes:", "expected a size > 0"},
      {"[observability]\nreflection = \"yes\"",
       "t.toml:2:", "observability.reflection:", "expected true or false"},
      {"[dedup]\nwindow = \"0s\"",
       "t.toml:2:", "dedup.window:", "expected a duration > 0"},
      {"[dedup]\nmax_ids = 0", "t.toml:2:", "dedup.max_ids: got 0",
       "expected an integer from 1"},
      {"[dedup]\nwindows = \"1m\"", "t.toml:2:", "dedup.windows", "unknown"},
      {"[groups.g]\npattern = \"a\"\ndedup_window = \"soon\"",
       "t.toml:3:", "groups.g.dedup_window:", "duration"},
      {"[groups]\nauto_create = 1",
       "t.toml:2:", "groups.auto_create:", "expected true or false"},
      {"[groups.defaults]\novershoot = 1", "t.toml:2:",
       "groups.defaults.overshoot: unknown key", "expected one of ack_wait"},
      {"[groups.defaults]\npattern = \"a\"",
       "t.toml:2:", "groups.defaults.pattern: unknown key", "one of"},
      {"[groups.defaults]\nmax_deliveries = 4294967296",
       "t.toml:2:", "groups.defaults.max_deliveries:", "from 0 to 4294967295"},
      {"[groups.defaults]\nack_wait = 0",
       "t.toml:2:", "groups.defaults.ack_wait", "expected a duration > 0"},
      {"[groups.g]\npattern = \"a\"\noverflow = \"foo\"",
       "t.toml:3:", "groups.g.overflow: got \"foo\"",
       "expected \"reject\" or \"drop_oldest\""},
      {"[groups.g]\npattern = \"a\"\npolicy = \"\"",
       "t.toml:3:", "groups.g.policy:", "expected a policy name"},
      {"\n[groups.g]\nack_wait = \"1s\"", "t.toml:2:",
       "groups.g: a declared group needs a pattern", "pattern = \"orders.>\""},
      {"[groups.g]\npattern = \"\"", "t.toml:2:", "groups.g.pattern: got \"\"",
       "expected a non-empty pattern"},
      {"[groups.g]\npattern = 5", "t.toml:2:", "groups.g.pattern: got 5",
       "non-empty pattern"},
      {"[groups]\ng = 5", "t.toml:2:", "groups.g: got 5", "expected a table"},
      {"[groups.\"a b\"]\npattern = \"x\"",
       "t.toml:1:", "groups.\"a b\": bad group name", "1 to 128 characters"},
      {"[groups]\ndefaults = []", "t.toml:2:", "groups.defaults: got an array",
       "a table"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.toml);
    auto text = error_of(c.toml);
    EXPECT_NE(text.find(c.where), std::string::npos) << text;
    EXPECT_NE(text.find(c.path), std::string::npos) << text;
    EXPECT_NE(text.find(c.expected), std::string::npos) << text;
    // The toml11 caret block quotes the line.
    EXPECT_NE(text.find(" --> t.toml"), std::string::npos) << text;
  }
}

TEST(config_loader, too_long_group_names_are_refused) {
  auto name = std::string(129, 'g');
  EXPECT_NE(
      error_of("[groups." + name + "]\npattern = \"a\"").find("bad group name"),
      std::string::npos);
  auto ok = config_of("[groups." + name.substr(1) + "]\npattern = \"a\"");
  EXPECT_EQ(ok.groups.count(name.substr(1)), 1u);
}

TEST(config_loader, the_log_summary_is_on_by_default_and_can_be_off) {
  EXPECT_EQ(broker_config{}.log_summary_interval, 60s);
  EXPECT_EQ(broker_config{}.log_format, "text");
  EXPECT_EQ(config_of("log_summary_interval = \"off\"").log_summary_interval,
            0ms);
  EXPECT_EQ(config_of("log_summary_interval = \"0s\"").log_summary_interval,
            0ms);
  EXPECT_EQ(config_of("log_summary_interval = 1500").log_summary_interval,
            1500ms);
  auto off = config_of("log_summary_interval = \"off\"");
  EXPECT_NE(describe(off).find("log_summary_interval off"), std::string::npos)
      << describe(off);
  EXPECT_NE(describe(broker_config{})
                .find("log_format text, log_summary_interval 1m"),
            std::string::npos)
      << describe(broker_config{});
}

TEST(config_loader, unknown_keys_are_errors_at_every_level) {
  auto top = error_of("listen = \"h:1\"\nlisen = \"h:2\"\n");
  EXPECT_NE(top.find("t.toml:2:"), std::string::npos) << top;
  EXPECT_NE(top.find("lisen: unknown key; expected one of listen, log_level"),
            std::string::npos)
      << top;
  auto limits = error_of("[limits]\n\nmax_mesage_bytes = 1\n");
  EXPECT_NE(limits.find("t.toml:3:"), std::string::npos) << limits;
  EXPECT_NE(limits.find("limits.max_mesage_bytes: unknown key"),
            std::string::npos);
  EXPECT_NE(limits.find("max_message_bytes, max_topic_bytes"),
            std::string::npos);
  auto group = error_of("[groups.w]\npattern = \"a.>\"\nack_wiat = \"1s\"\n");
  EXPECT_NE(group.find("t.toml:3:"), std::string::npos) << group;
  EXPECT_NE(group.find("groups.w.ack_wiat: unknown key"), std::string::npos);
  auto section = error_of("[tsl]\ncert = \"x\"\n");
  EXPECT_NE(section.find("tsl: unknown key"), std::string::npos) << section;
  auto nested = error_of("[limits.sub]\nx = 1\n");
  EXPECT_NE(nested.find("limits.sub: unknown key"), std::string::npos);
}

TEST(config_loader, all_errors_are_reported_in_file_order) {
  auto text = error_of("log_level = \"loud\"\n[limits]\nmax_topic_bytes = 0\n"
                       "[groups.z]\nack_wait = \"1s\"\n[groups.a]\n"
                       "pattern = \"a\"\noverflow = \"x\"\n");
  auto first = text.find("t.toml:1:");
  auto second = text.find("t.toml:3:");
  auto third = text.find("t.toml:4:");
  auto fourth = text.find("t.toml:8:");
  ASSERT_NE(fourth, std::string::npos) << text;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_LT(third, fourth);
}

TEST(config_loader, syntax_errors_report_file_and_line) {
  auto text = error_of("listen = \"a:1\"\nlog_level = \n");
  EXPECT_NE(text.find("t.toml:2: TOML syntax error"), std::string::npos)
      << text;
  text = error_of("[limits]\n[limits]\n");
  EXPECT_NE(text.find("TOML syntax error"), std::string::npos) << text;
  EXPECT_NE(error_of(std::string("a = \"\0\xff\"", 8)).find("t.toml"),
            std::string::npos);
}

// Found by fuzz_config (tests/fuzz/corpus/config/bad_utf8_literal.toml):
// toml11 3.7 read out of bounds on bad UTF-8 in a literal string.
TEST(config_loader, text_that_is_not_utf8_is_a_syntax_error) {
  auto text = error_of("log_level = \"info\"\nlisten = '* \x9f'\n");
  EXPECT_NE(text.find("t.toml:2: TOML syntax error"), std::string::npos)
      << text;
  EXPECT_NE(text.find("byte 13 of line 2 is not UTF-8"), std::string::npos)
      << text;
  for (std::string bad :
       {"\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\xff"})
    EXPECT_NE(error_of("a = '" + bad + "'\n").find("not UTF-8"),
              std::string::npos);
  auto cfg = config_of("# \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n");
  EXPECT_EQ(cfg.listen, defaults().listen);
}

} // namespace
