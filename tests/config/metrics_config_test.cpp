// Tests of the [metrics] table and the metrics listen address syntax that
// the config file and the --metrics-listen flag share, and of the [console]
// table (the console is served on the metrics listener).

#include "config/config_loader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using tb::load_config_string;

// Loads `text` as "m.toml"; fails the test on an error.
tb::broker_config config_of(const std::string& text) {
  auto res = load_config_string(text, "m.toml");
  EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().text);
  return res.ok() ? res.value() : tb::broker_config{};
}

// Loads `text` as "m.toml" and returns its error text; fails if it loads.
std::string error_of(const std::string& text) {
  auto res = load_config_string(text, "m.toml");
  EXPECT_FALSE(res.ok()) << "loaded:\n" << text;
  return res.ok() ? std::string{} : res.error().text;
}

TEST(metrics_config, on_by_default_on_loopback_7401_without_topics) {
  tb::broker_config cfg;
  EXPECT_TRUE(cfg.metrics.enabled());
  EXPECT_EQ(cfg.metrics.listen, "127.0.0.1:7401");
  EXPECT_FALSE(cfg.metrics.per_topic);
  EXPECT_EQ(config_of("").metrics, cfg.metrics);
}

TEST(metrics_config, both_keys_are_read) {
  auto cfg = config_of("[metrics]\nlisten = \"0.0.0.0:9100\"\n"
                       "per_topic = true\n");
  EXPECT_EQ(cfg.metrics.listen, "0.0.0.0:9100");
  EXPECT_TRUE(cfg.metrics.per_topic);
  EXPECT_TRUE(cfg.metrics.enabled());
  EXPECT_EQ(config_of("[metrics]\nlisten = \"[::1]:0\"\n").metrics.listen,
            "[::1]:0");
}

TEST(metrics_config, off_or_empty_switches_the_listener_off) {
  for (auto off : {"\"off\"", "\"\""}) {
    auto cfg = config_of(std::string{"[metrics]\nlisten = "} + off + "\n");
    EXPECT_FALSE(cfg.metrics.enabled()) << off;
    EXPECT_EQ(cfg.metrics.listen, "") << off;
  }
}

TEST(metrics_config, bad_values_name_key_line_and_expectation) {
  auto text = error_of("[metrics]\n\nlisten = \"localhost\"\n");
  EXPECT_NE(text.find("m.toml:3:"), std::string::npos) << text;
  EXPECT_NE(text.find("metrics.listen: got \"localhost\"; expected \"off\" "
                      "or HOST:PORT"),
            std::string::npos)
      << text;
  text = error_of("[metrics]\nlisten = 7401\n");
  EXPECT_NE(text.find("metrics.listen: got 7401; expected \"off\""),
            std::string::npos)
      << text;
  text = error_of("[metrics]\nper_topic = \"yes\"\n");
  EXPECT_NE(text.find("m.toml:2:"), std::string::npos) << text;
  EXPECT_NE(text.find("metrics.per_topic: got \"yes\"; expected true or false"),
            std::string::npos)
      << text;
}

TEST(metrics_config, unknown_keys_in_the_table_are_refused) {
  auto text = error_of("[metrics]\nport = 7401\n");
  EXPECT_NE(text.find("metrics.port: unknown key; expected one of listen, "
                      "per_topic, tls"),
            std::string::npos)
      << text;
  text = error_of("metrics = true\n");
  EXPECT_NE(text.find("metrics: got a boolean; expected a table"),
            std::string::npos)
      << text;
}

TEST(metrics_config, the_listen_syntax_shared_with_the_flag) {
  std::string out = "unchanged";
  EXPECT_TRUE(tb::parse_metrics_listen("127.0.0.1:9100", out));
  EXPECT_EQ(out, "127.0.0.1:9100");
  EXPECT_TRUE(tb::parse_metrics_listen("off", out));
  EXPECT_EQ(out, "");
  out = "unchanged";
  EXPECT_TRUE(tb::parse_metrics_listen("", out));
  EXPECT_EQ(out, "");
  for (auto bad : {"OFF", "none", "9100", "host", "::1:9100", "h:65536", "h :1",
                   "127.0.0.1:-1"}) {
    out = "unchanged";
    EXPECT_FALSE(tb::parse_metrics_listen(bad, out)) << bad;
    EXPECT_EQ(out, "unchanged") << bad;
  }
}

TEST(metrics_config, describe_shows_the_metrics_line) {
  auto on = describe(config_of("[metrics]\nper_topic = true\n"));
  EXPECT_NE(on.find("\nmetrics: listen 127.0.0.1:7401, per_topic true, "
                    "tls false\n"),
            std::string::npos)
      << on;
  auto off = describe(config_of("[metrics]\nlisten = \"off\"\n"));
  EXPECT_NE(off.find("\nmetrics: off\n"), std::string::npos) << off;
}

TEST(console_config, on_and_read_only_by_default) {
  tb::broker_config cfg;
  EXPECT_TRUE(cfg.console.enabled);
  EXPECT_FALSE(cfg.console.allow_actions);
  EXPECT_EQ(config_of("").console, cfg.console);
  auto set = config_of("[console]\nenabled = false\nallow_actions = true\n");
  EXPECT_FALSE(set.console.enabled);
  EXPECT_TRUE(set.console.allow_actions);
}

TEST(console_config, bad_and_unknown_keys_name_key_and_line) {
  auto text = error_of("[console]\nenabled = \"yes\"\nactions = true\n");
  EXPECT_NE(text.find("m.toml:2:"), std::string::npos) << text;
  EXPECT_NE(text.find("console.enabled"), std::string::npos) << text;
  EXPECT_NE(text.find("m.toml:3:"), std::string::npos) << text;
  EXPECT_NE(text.find("console.actions"), std::string::npos) << text;
}

TEST(console_config, describe_shows_the_console_line) {
  auto on = describe(config_of(""));
  EXPECT_NE(on.find("\nconsole: on at / of the metrics listener, "
                    "allow_actions false\n"),
            std::string::npos)
      << on;
  auto off = describe(config_of("[console]\nenabled = false\n"));
  EXPECT_NE(off.find("\nconsole: off\n"), std::string::npos) << off;
  auto no_listener = describe(config_of("[metrics]\nlisten = \"off\"\n"));
  EXPECT_NE(no_listener.find("\nconsole: off (it is served on the metrics "
                             "listener, which is off)\n"),
            std::string::npos)
      << no_listener;
}

} // namespace
