// Tests of the [cluster] table (issue 30, docs/cluster.md): defaults, the
// keys, and a clear error for each bad value.

#include "config/config_loader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using tb::load_config_string;

// Loads `text` as "c.toml"; fails the test on an error.
tb::broker_config cluster_config_of(const std::string& text) {
  auto res = load_config_string(text, "c.toml");
  EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().text);
  return res.ok() ? res.value() : tb::broker_config{};
}

// Loads `text` as "c.toml" and returns its error text; fails if it loads.
std::string cluster_error_of(const std::string& text) {
  auto res = load_config_string(text, "c.toml");
  EXPECT_FALSE(res.ok()) << "loaded:\n" << text;
  return res.ok() ? std::string{} : res.error().text;
}

// Expects `text` to contain `part`.
void expect_in(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos)
      << "expected \"" << part << "\" in:\n"
      << text;
}

const std::string node = "[cluster]\nname = \"n1\"\n"
                         "listen = \"127.0.0.1:7410\"\n";

TEST(cluster_config, off_without_the_table) {
  tb::broker_config defaults;
  EXPECT_FALSE(defaults.cluster.enabled());
  EXPECT_FALSE(
      cluster_config_of("listen = \"127.0.0.1:7400\"\n").cluster.enabled());
  expect_in(tb::describe(defaults), "cluster: off (a single node)");
}

TEST(cluster_config, reads_every_key_and_keeps_the_defaults) {
  auto cfg = cluster_config_of(node);
  EXPECT_TRUE(cfg.cluster.enabled());
  EXPECT_EQ(cfg.cluster.node_name, "n1");
  EXPECT_EQ(cfg.cluster.listen, "127.0.0.1:7410");
  EXPECT_TRUE(cfg.cluster.peers.empty());
  EXPECT_EQ(cfg.cluster.heartbeat, std::chrono::milliseconds(200));
  EXPECT_EQ(cfg.cluster.dead_after, std::chrono::milliseconds(1000));
  EXPECT_EQ(cfg.cluster.link_window_batches, 16u);
  EXPECT_EQ(cfg.cluster.link_buffer_bytes, 64u << 20);
  EXPECT_FALSE(cfg.cluster.tls);
  cfg =
      cluster_config_of(node + "peers = [\"127.0.0.1:7420\", \"[::1]:7430\"]\n"
                               "heartbeat = \"100ms\"\ndead_after = \"500ms\"\n"
                               "link_window_batches = 8\n"
                               "link_buffer_bytes = \"1MiB\"\n");
  EXPECT_EQ(cfg.cluster.peers,
            (std::vector<std::string>{"127.0.0.1:7420", "[::1]:7430"}));
  EXPECT_EQ(cfg.cluster.heartbeat, std::chrono::milliseconds(100));
  EXPECT_EQ(cfg.cluster.dead_after, std::chrono::milliseconds(500));
  EXPECT_EQ(cfg.cluster.link_window_batches, 8u);
  EXPECT_EQ(cfg.cluster.link_buffer_bytes, 1u << 20);
  expect_in(tb::describe(cfg),
            "cluster: node n1, listen 127.0.0.1:7410, peers 127.0.0.1:7420 "
            "[::1]:7430, heartbeat 100ms, dead_after 500ms");
}

TEST(cluster_config, a_name_and_a_listen_address_are_required) {
  auto err = cluster_error_of("[cluster]\npeers = []\n");
  expect_in(err, "[cluster] needs a name");
  expect_in(err, "[cluster] needs a listen address");
}

TEST(cluster_config, bad_values_are_named) {
  expect_in(cluster_error_of("[cluster]\nname = \"n 1\"\nlisten = "
                             "\"127.0.0.1:7410\"\n"),
            "c.toml:2:8: cluster.name: got \"n 1\"; expected a node name");
  expect_in(cluster_error_of("[cluster]\nname = \"n1\"\nlisten = "
                             "\"127.0.0.1:0\"\n"),
            "cluster.listen: got \"127.0.0.1:0\"; expected HOST:PORT with a "
            "port from 1 to 65535");
  expect_in(cluster_error_of(node + "peers = \"127.0.0.1:7420\"\n"),
            "cluster.peers: got \"127.0.0.1:7420\"; expected an array");
  expect_in(cluster_error_of(node + "peers = [\"nowhere\"]\n"),
            "cluster.peers: got \"nowhere\"; expected HOST:PORT");
  expect_in(cluster_error_of(node + "peers = [\"a:1\", \"a:1\"]\n"),
            "\"a:1\" is listed twice");
  expect_in(cluster_error_of(node + "peers = [\"127.0.0.1:7410\"]\n"),
            "it lists this node's own listen address 127.0.0.1:7410");
  expect_in(cluster_error_of(node + "dead_after = \"300ms\"\n"),
            "cluster.dead_after: shorter than two heartbeats");
  expect_in(cluster_error_of(node + "heartbeat = \"2s\"\n"),
            "cluster.heartbeat: longer than half of dead_after");
  expect_in(cluster_error_of(node + "colour = 1\n"),
            "cluster.colour: unknown key; expected one of name, listen, "
            "peers");
}

TEST(cluster_config, the_majority_rule_is_on_unless_quorum_is_none) {
  EXPECT_EQ(cluster_config_of(node).cluster.quorum, tb::quorum_rule::majority);
  EXPECT_EQ(cluster_config_of(node + "quorum = \"majority\"\n").cluster.quorum,
            tb::quorum_rule::majority);
  auto off = cluster_config_of(node + "quorum = \"none\"\n");
  EXPECT_EQ(off.cluster.quorum, tb::quorum_rule::none);
  expect_in(tb::describe(off), ", quorum none");
  expect_in(cluster_error_of(node + "quorum = \"all\"\n"),
            "c.toml:4:10: cluster.quorum: got \"all\"; expected \"majority\" "
            "(group operations need a majority of the configured nodes) or "
            "\"none\"");
  expect_in(cluster_error_of(node + "quorum = 2\n"),
            "cluster.quorum: got 2; expected \"majority\"");
}

TEST(cluster_config, tls_needs_the_tls_table_with_a_ca) {
  expect_in(cluster_error_of(node + "tls = true\n"),
            "cluster.tls: true without [tls] client_ca");
  auto cfg =
      cluster_config_of(node + "tls = true\n[tls]\ncert = \"s.crt\"\n"
                               "key = \"s.key\"\nclient_ca = \"ca.crt\"\n");
  EXPECT_TRUE(cfg.cluster.tls);
}

} // namespace
