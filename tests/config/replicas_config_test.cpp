// Tests of `replicas` in the config (issue 32; docs/configuration.md): per
// group in [groups.NAME] and [groups.defaults], the broker default
// `[cluster] replicas` for groups that set none, and the clear error for a
// value other than 0 or 1.

#include "config/config_loader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

// A node of a cluster, as every test here needs one for the default.
const std::string replicas_cluster =
    "[cluster]\nname = \"n1\"\nlisten = \"127.0.0.1:7410\"\n";

// Loads `text`; fails the test if it does not load.
tb::broker_config replicas_config_of(const std::string& text) {
  auto res = tb::load_config_string(text, "t.toml");
  EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().text);
  return res.ok() ? res.value() : tb::broker_config{};
}

// Loads `text`; returns its error text and fails if it loads.
std::string replicas_error_of(const std::string& text) {
  auto res = tb::load_config_string(text, "t.toml");
  EXPECT_FALSE(res.ok()) << "loaded:\n" << text;
  return res.ok() ? std::string{} : res.error().text;
}

TEST(replicas_config, default_is_zero_everywhere) {
  auto cfg = replicas_config_of(replicas_cluster +
                                "[groups.jobs]\npattern = \"jobs.>\"\n");
  EXPECT_EQ(cfg.cluster.replicas, 0u);
  EXPECT_EQ(cfg.group_defaults.replicas, 0u);
  EXPECT_EQ(cfg.groups.at("jobs").replicas, 0u);
}

TEST(replicas_config, a_group_sets_its_own) {
  auto cfg = replicas_config_of(
      replicas_cluster + "[groups.jobs]\npattern = \"jobs.>\"\nreplicas = 1\n"
                         "[groups.logs]\npattern = \"logs.>\"\n");
  EXPECT_EQ(cfg.groups.at("jobs").replicas, 1u);
  EXPECT_EQ(cfg.groups.at("logs").replicas, 0u);
}

TEST(replicas_config, the_cluster_default_applies_to_groups_that_set_none) {
  auto cfg =
      replicas_config_of(replicas_cluster + "replicas = 1\n" +
                         "[groups.jobs]\npattern = \"jobs.>\"\n"
                         "[groups.logs]\npattern = \"logs.>\"\nreplicas = 0\n");
  EXPECT_EQ(cfg.cluster.replicas, 1u);
  // Auto-created groups take the defaults.
  EXPECT_EQ(cfg.group_defaults.replicas, 1u);
  EXPECT_EQ(cfg.groups.at("jobs").replicas, 1u);
  EXPECT_EQ(cfg.groups.at("logs").replicas, 0u);
  // The broker's start line says so.
  auto text = tb::describe(cfg);
  EXPECT_NE(text.find("quorum majority, replicas 1"), std::string::npos)
      << text;
  auto at = text.find("\ngroup jobs: pattern jobs.>");
  ASSERT_NE(at, std::string::npos) << text;
  auto jobs = text.substr(at + 1);
  jobs = jobs.substr(0, jobs.find('\n'));
  EXPECT_NE(jobs.find(", replicas 1"), std::string::npos) << text;
}

TEST(replicas_config, groups_defaults_win_over_the_cluster_default) {
  auto cfg = replicas_config_of(replicas_cluster + "replicas = 1\n" +
                                "[groups.defaults]\nreplicas = 0\n"
                                "[groups.jobs]\npattern = \"jobs.>\"\n");
  EXPECT_EQ(cfg.group_defaults.replicas, 0u);
  EXPECT_EQ(cfg.groups.at("jobs").replicas, 0u);
}

TEST(replicas_config, a_single_node_accepts_replicas) {
  auto cfg = replicas_config_of("[groups.jobs]\npattern = \"jobs.>\"\n"
                                "replicas = 1\n");
  EXPECT_EQ(cfg.groups.at("jobs").replicas, 1u);
}

TEST(replicas_config, a_value_other_than_0_or_1_is_refused_naming_the_group) {
  auto err = replicas_error_of("[groups.jobs]\npattern = \"jobs.>\"\n"
                               "replicas = 2\n");
  EXPECT_NE(err.find("t.toml:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("groups.jobs.replicas: replicas = 2: a group has 0 or "
                     "1 replicas"),
            std::string::npos)
      << err;
  auto defaults = replicas_error_of("[groups.defaults]\nreplicas = 3\n"
                                    "[groups.jobs]\npattern = \"jobs.>\"\n");
  EXPECT_NE(defaults.find("groups.defaults.replicas: replicas = 3"),
            std::string::npos)
      << defaults;
  auto cluster = replicas_error_of(replicas_cluster + "replicas = 2\n");
  EXPECT_NE(cluster.find("cluster.replicas"), std::string::npos) << cluster;
  EXPECT_NE(cluster.find("0 to 1"), std::string::npos) << cluster;
}

} // namespace
