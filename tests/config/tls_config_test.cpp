// Tests of the [tls] table and [metrics] tls: which keys go together, the
// default of [metrics] tls, and the start-up summary.

#include "config/config_loader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using tb::load_config_string;

// Loads `text` as "t.toml"; fails the test on an error.
tb::broker_config config_of(const std::string& text) {
  auto res = load_config_string(text, "t.toml");
  EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().text);
  return res.ok() ? res.value() : tb::broker_config{};
}

// Loads `text` as "t.toml" and returns its error text; fails if it loads.
std::string error_of(const std::string& text) {
  auto res = load_config_string(text, "t.toml");
  EXPECT_FALSE(res.ok()) << "loaded:\n" << text;
  return res.ok() ? std::string{} : res.error().text;
}

// Expects `text` to contain `part`.
void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos)
      << "expected \"" << part << "\" in:\n"
      << text;
}

const std::string server_tls = "[tls]\ncert = \"/etc/tb/server.crt\"\n"
                               "key = \"/etc/tb/server.key\"\n";

TEST(tls_config, off_by_default_and_without_the_table) {
  tb::broker_config defaults;
  EXPECT_FALSE(defaults.tls.enabled());
  EXPECT_FALSE(defaults.metrics.tls);
  auto cfg = config_of("[metrics]\nper_topic = true\n");
  EXPECT_FALSE(cfg.tls.enabled());
  EXPECT_FALSE(cfg.metrics.tls);
}

TEST(tls_config, cert_and_key_turn_tls_on_and_metrics_tls_with_it) {
  auto cfg = config_of(server_tls);
  EXPECT_EQ(cfg.tls.cert, "/etc/tb/server.crt");
  EXPECT_EQ(cfg.tls.key, "/etc/tb/server.key");
  EXPECT_EQ(cfg.tls.client_ca, "");
  EXPECT_TRUE(cfg.tls.enabled());
  EXPECT_FALSE(cfg.tls.mutual());
  EXPECT_TRUE(cfg.metrics.tls);
}

TEST(tls_config, the_default_of_metrics_tls_does_not_depend_on_order) {
  // [metrics] before [tls] in the file: still on by default.
  auto cfg = config_of("[metrics]\nper_topic = true\n" + server_tls);
  EXPECT_TRUE(cfg.metrics.tls);
}

TEST(tls_config, client_ca_asks_for_client_certificates) {
  auto cfg = config_of(server_tls + "client_ca = \"clients.pem\"\n");
  EXPECT_EQ(cfg.tls.client_ca, "clients.pem");
  EXPECT_TRUE(cfg.tls.mutual());
}

TEST(tls_config, metrics_may_stay_plain_with_tls) {
  auto cfg = config_of(server_tls + "[metrics]\ntls = false\n");
  EXPECT_TRUE(cfg.tls.enabled());
  EXPECT_FALSE(cfg.metrics.tls);
  EXPECT_TRUE(config_of(server_tls + "[metrics]\ntls = true\n").metrics.tls);
}

TEST(tls_config, metrics_tls_without_the_table_is_an_error) {
  auto text = error_of("[metrics]\ntls = true\n");
  expect_has(text, "t.toml:2:");
  expect_has(text, "metrics.tls: true without [tls]; expected a [tls] table "
                   "with cert and key");
  // false without [tls] is merely redundant.
  EXPECT_FALSE(config_of("[metrics]\ntls = false\n").metrics.tls);
}

TEST(tls_config, cert_without_key_names_the_missing_key) {
  auto text = error_of("[tls]\ncert = \"a.crt\"\n");
  expect_has(text, "t.toml:2:");
  expect_has(text, "tls.cert: set without tls.key; expected both tls.cert "
                   "and tls.key");
}

TEST(tls_config, key_without_cert_names_the_missing_key) {
  auto text = error_of("[tls]\n\nkey = \"a.key\"\n");
  expect_has(text, "t.toml:3:");
  expect_has(text, "tls.key: set without tls.cert; expected both tls.cert "
                   "and tls.key");
}

TEST(tls_config, client_ca_without_cert_is_an_error) {
  auto text = error_of("[tls]\nclient_ca = \"ca.pem\"\n");
  expect_has(text, "tls.client_ca: set without tls.cert; expected tls.cert "
                   "and tls.key too");
}

TEST(tls_config, an_empty_table_is_an_error) {
  expect_has(error_of("[tls]\n"), "tls: an empty table; expected both "
                                  "tls.cert and tls.key");
}

TEST(tls_config, values_must_be_non_empty_strings) {
  expect_has(error_of(server_tls + "client_ca = \"\"\n"),
             "tls.client_ca: got \"\"; expected a non-empty file path");
  expect_has(error_of("[tls]\ncert = 1\nkey = \"k\"\n"),
             "tls.cert: got 1; expected a non-empty file path");
  expect_has(error_of(server_tls + "[metrics]\ntls = \"yes\"\n"),
             "metrics.tls: got \"yes\"; expected true or false");
  expect_has(error_of("tls = true\n"), "tls: got a boolean; expected a table");
}

TEST(tls_config, unknown_keys_are_errors) {
  expect_has(error_of(server_tls + "ca = \"x\"\n"),
             "tls.ca: unknown key; expected one of cert, key, client_ca");
  expect_has(error_of("[metrics]\nhttps = true\n"),
             "metrics.https: unknown key; expected one of listen, "
             "per_topic, tls");
}

TEST(tls_config, describe_shows_the_tls_settings) {
  auto off = describe(config_of(""));
  expect_has(off, "\ntls: off (plain text)");
  expect_has(off, "per_topic false, tls false\n");
  auto on = describe(config_of(server_tls + "client_ca = \"c.pem\"\n"));
  expect_has(on, "\ntls: cert /etc/tb/server.crt, key /etc/tb/server.key, "
                 "client_ca c.pem (mutual TLS)");
  expect_has(on, "per_topic false, tls true\n");
  auto plain = describe(config_of(server_tls));
  expect_has(plain, "client_ca - (no client certificates)");
}

TEST(tls_config, the_example_file_shows_the_keys_commented_out) {
  auto res = tb::load_config_file(std::string{TINYBROKER_SOURCE_DIR} +
                                  "/config/tinybroker.example.toml");
  ASSERT_TRUE(res.ok()) << res.error().text;
  EXPECT_FALSE(res.value().tls.enabled());
  EXPECT_FALSE(res.value().metrics.tls);
}

} // namespace
