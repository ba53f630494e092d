// Tests of the start-up warnings about listeners reachable from other hosts
// without TLS or auth, and of what counts as loopback.

#include "net/listen_check.hpp"

#include <gtest/gtest.h>

namespace {

TEST(exposure_warnings, loopback_hosts) {
  for (auto host : {"localhost", "127.0.0.1", "127.1.2.3", "[::1]", "::1",
                    "[::ffff:127.0.0.1]"})
    EXPECT_TRUE(tb::is_loopback_host(host)) << host;
  for (auto host : {"0.0.0.0", "[::]", "10.0.0.1", "128.0.0.1", "example.com",
                    "localhost.example.com", "", "[::2]"})
    EXPECT_FALSE(tb::is_loopback_host(host)) << host;
  EXPECT_EQ(tb::host_of("[::1]:7400"), "[::1]");
  EXPECT_EQ(tb::host_of("0.0.0.0:0"), "0.0.0.0");
}

TEST(exposure_warnings, none_for_the_defaults) {
  EXPECT_TRUE(tb::exposure_warnings(tb::broker_config{}).empty());
}

TEST(exposure_warnings, all_three_for_open_listeners_without_tls_or_auth) {
  tb::broker_config cfg;
  cfg.listen = "0.0.0.0:7400";
  cfg.metrics.listen = "[::]:7401";
  auto w = tb::exposure_warnings(cfg);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0], "the gRPC listener 0.0.0.0:7400 is not on loopback and has "
                  "no TLS: traffic and tokens travel in clear text (set [tls] "
                  "cert and key)");
  EXPECT_EQ(w[1], "the metrics listener [::]:7401 is not on loopback and has "
                  "no TLS: scrapes travel in clear text (set [tls], and "
                  "[metrics] tls = true)");
  EXPECT_EQ(w[2], "the gRPC listener 0.0.0.0:7400 is not on loopback and auth "
                  "is off: anyone who reaches 0.0.0.0:7400 may publish, "
                  "subscribe and delete groups (set [auth] enabled = true)");
}

TEST(exposure_warnings, tls_and_auth_silence_them) {
  tb::broker_config cfg;
  cfg.listen = "10.1.2.3:7400";
  cfg.metrics.listen = "10.1.2.3:7401";
  cfg.tls = {"s.crt", "s.key", ""};
  cfg.metrics.tls = true;
  cfg.auth.enabled = true;
  EXPECT_TRUE(tb::exposure_warnings(cfg).empty());
  cfg.metrics.tls = false;
  auto w = tb::exposure_warnings(cfg);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("the metrics listener 10.1.2.3:7401"), std::string::npos);
  cfg.metrics.listen.clear(); // metrics off
  EXPECT_TRUE(tb::exposure_warnings(cfg).empty());
}

} // namespace
