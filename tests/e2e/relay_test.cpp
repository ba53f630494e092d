// End to end: tinybroker-relay, the transport's floor (docs/performance.md,
// "Latency at everyday rates"), serves the load generator as a broker would,
// and the load generator reports the server's and its own CPU.

#include <csignal>
#include <regex>
#include <string>

#include "e2e_fixture.hpp"
#include "json_fields.hpp"

namespace tb::test {
namespace {

// Returns the path of a program built in tools/.
std::string tool(const std::string& name) {
  return std::string{TINYBROKER_TOOLS_DIR} + "/" + name;
}

// A relay on a free loopback port.
class relay_process : public child_process {
public:
  /// Starts `tinybroker-relay --listen LISTEN`.
  explicit relay_process(const std::string& listen = "127.0.0.1:0")
      : child_process(tool("tinybroker-relay"), {"--listen", listen}) {}

  /// Waits for the relay's address line; returns HOST:PORT or "".
  std::string address() {
    if (!wait_for_output("listening on", patience))
      return "";
    std::smatch match;
    auto out = output();
    if (!std::regex_search(out, match,
                           std::regex{"listening on (127\\.0\\.0\\.1:\\d+)"}))
      return "";
    return match[1];
  }
};

// A relay per test, listening before the test starts.
class RelayTest : public ::testing::Test {
protected:
  void SetUp() override {
    address = relay.address();
    ASSERT_FALSE(address.empty()) << relay.output();
  }

  relay_process relay;
  std::string address;
};

TEST_F(RelayTest, TheBenchRunsAgainstItAndReportsBothSidesCpu) {
  auto [code, out] = run_command(tool("tinybroker-bench"),
                                 {"--server", address, "--scenario", "s4",
                                  "--rate", "2000", "--messages", "1000",
                                  "--broker-pid", std::to_string(relay.pid()),
                                  "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "received"), 1000) << out;
  EXPECT_EQ(json_number(out, "missing"), 0) << out;
  EXPECT_EQ(json_number(out, "out_of_order"), 0) << out;
  EXPECT_GT(json_number(out, "p50"), 0) << out;
  // Both processes did work for 0.5 s of messages.
  EXPECT_GT(json_number(out, "broker_cpu_s"), 0) << out;
  EXPECT_GT(json_number(out, "bench_cpu_s"), 0) << out;
  auto stopped = relay.stop(SIGTERM);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(*stopped, 0) << relay.output();
}

TEST_F(RelayTest, ItForwardsEveryPublishToEverySubscriberAndConfirms) {
  auto [code, out] = run_command(tool("tinybroker-bench"),
                                 {"--server", address, "--scenario", "s2",
                                  "--messages", "3000", "--batch", "100",
                                  "--paced", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "received"), 4 * 3000) << out;
  EXPECT_EQ(json_number(out, "publish_errors"), 0) << out;
}

TEST_F(RelayTest, ItHandsEachMessageToOneGroupMemberInTurn) {
  // The floor of the group path: the queue scenario runs against it too.
  auto [code, out] = run_command(
      tool("tinybroker-bench"),
      {"--server", address, "--scenario", "queue", "--workers", "3",
       "--messages", "3000", "--batch", "1", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "received"), 3000) << out;
  EXPECT_EQ(json_number(out, "missing"), 0) << out;
  EXPECT_EQ(json_number(out, "redelivered"), 0) << out;
}

TEST_F(RelayTest, ABusyPortIsRefusedWithTheReason) {
  auto [code, out] =
      run_command(tool("tinybroker-relay"), {"--listen", address});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("cannot listen on " + address), std::string::npos) << out;
}

TEST(RelayFlagsTest, ItRefusesUnknownFlags) {
  // --version is in CliHabitsTest with every other program.
  auto bad = run_command(tool("tinybroker-relay"), {"--listne", "x"});
  EXPECT_NE(bad.first, 0) << bad.second;
  EXPECT_NE(bad.second.find("--listne"), std::string::npos) << bad.second;
}

} // namespace
} // namespace tb::test
