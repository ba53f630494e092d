// Tests of the config that comes from outside a TOML string: files on disk,
// the example file and the docs' TOML blocks, and what the command-line
// tools share with the broker (flag durations, the default address).

#include "client/reach.hpp"
#include "config/config_loader.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using namespace std::chrono_literals;
using tb::broker_config;
using tb::load_config_string;

TEST(config_loader, missing_or_unreadable_files_give_clear_errors) {
  auto res = tb::load_config_file("/nonexistent/tinybroker.toml");
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().text, "cannot open config file "
                              "/nonexistent/tinybroker.toml: No such file or "
                              "directory");
  auto dir = tb::load_config_file(std::filesystem::temp_directory_path());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().text.find("is a directory"), std::string::npos);
}

TEST(config_loader, files_load_with_their_path_as_source) {
  auto path = ::testing::TempDir() + "tb_config_loader_test.toml";
  std::ofstream(path) << "log_level = \"warn\"\n\nworker_threads = 2000\n";
  auto bad = tb::load_config_file(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().text.find(path + ":3:"), std::string::npos);
  std::ofstream(path) << "log_level = \"warn\"\n";
  auto res = tb::load_config_file(path);
  std::remove(path.c_str());
  ASSERT_TRUE(res.ok()) << res.error().text;
  EXPECT_EQ(res.value().source, path);
  EXPECT_EQ(res.value().log_level, "warn");
}

// Returns the repository root (CMake passes it; else this file's ../..).
std::filesystem::path repo_root() {
#ifdef TINYBROKER_SOURCE_DIR
  return TINYBROKER_SOURCE_DIR;
#else
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "..";
#endif
}

TEST(config_loader, example_file_is_the_defaults_plus_its_group) {
  auto path = repo_root() / "config" / "tinybroker.example.toml";
  auto res = tb::load_config_file(path.string());
  ASSERT_TRUE(res.ok()) << res.error().text;
  broker_config want;
  want.source = path.string();
  auto& g = want.groups["orders-workers"];
  g.pattern = "orders.>";
  g.ack_wait = 10s;
  g.overflow = tb::overflow_policy::drop_oldest;
  g.dead_letter = "$dlq.orders";
  EXPECT_EQ(res.value(), want) << describe(res.value());
}

TEST(config_loader, toml_examples_in_the_docs_load) {
  // The [auth] example reads a token from this variable.
  setenv("ORDERS_TOKEN", "orders-token-from-the-environment", 1);
  std::ifstream in(repo_root() / "docs" / "configuration.md");
  ASSERT_TRUE(in) << "docs/configuration.md not found";
  std::string line, block;
  int blocks = 0;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line == "```toml") {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      ++blocks;
      auto res = load_config_string(block, "docs");
      EXPECT_TRUE(res.ok()) << block << (res.ok() ? "" : res.error().text);
    } else if (inside) {
      block += line + "\n";
    }
  }
  EXPECT_GE(blocks, 2);
}

// Command-line durations (tinybroker-cli, -bench, -soak) need a unit: a bare
// number other than 0 is refused with a sentence that says to add one.
TEST(config_loader, flag_durations_need_a_unit) {
  EXPECT_EQ(tb::parse_flag_duration("500ms"), 500ms);
  EXPECT_EQ(tb::parse_flag_duration("5s"), 5s);
  EXPECT_EQ(tb::parse_flag_duration("2m"), 2min);
  EXPECT_EQ(tb::parse_flag_duration("0"), 0ms);
  EXPECT_EQ(tb::parse_flag_duration("00"), 0ms);
  for (auto bad : {"5", "1500", "", "5 s", "1.5s", "-1s", "5sec"})
    EXPECT_FALSE(tb::parse_flag_duration(bad)) << bad;
  EXPECT_EQ(tb::bad_flag_duration("--timeout", "5"),
            "--timeout: \"5\" has no unit; add one: 5ms, 5s, 5m or 5h");
  EXPECT_EQ(tb::bad_flag_duration("--timeout", "soon"),
            "--timeout: got \"soon\"; expected a duration like 500ms, 30s, "
            "2m or 1h");
}

// The clients (tinybroker-cli, -bench, the examples) find a broker started
// without arguments when nothing names another address.
TEST(config_loader, clients_default_to_the_brokers_listen_address) {
  EXPECT_EQ(tb::client::default_server, broker_config{}.listen);
}

} // namespace
