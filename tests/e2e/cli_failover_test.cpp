// End to end: tinybroker-cli given several addresses (`--server A,B`,
// issue 30 point 5) uses the first that answers, and names each one when
// none does.

#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "failover_fixture.hpp"

namespace tb::test {
namespace {

using CliFailoverTest = FailoverTest;

TEST_F(CliFailoverTest, AnUnreachableFirstServerIsPassed) {
  closed_port dead;
  auto [code, out] = run_command(
      cli_binary(), {"--server", dead.address() + "," + b_->address(), "pub",
                     "orders.1", "hello"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(published_ids(out).size(), 1u) << out;
  // It went to B: B's stats count it.
  auto [stats_code, stats] =
      run_command(cli_binary(), {"--server", b_->address(), "--json", "stats"});
  ASSERT_EQ(stats_code, 0) << stats;
  EXPECT_NE(stats.find("\"published\":1"), std::string::npos) << stats;
}

TEST_F(CliFailoverTest, EveryCommandTakesTheListFromTheEnvironmentToo) {
  closed_port dead;
  setenv("TINYBROKER_SERVER", (dead.address() + "," + a_->address()).c_str(),
         1);
  auto [code, out] = run_command(cli_binary(), {"info"});
  unsetenv("TINYBROKER_SERVER");
  EXPECT_EQ(code, 0) << out;
}

TEST_F(CliFailoverTest, NoneReachableNamesEachServer) {
  closed_port first, second;
  auto [code, out] = run_command(
      cli_binary(), {"--server", first.address() + "," + second.address(),
                     "--timeout", "1s", "info"});
  EXPECT_EQ(code, 3) << out;
  EXPECT_NE(out.find("cannot connect to any of the 2 brokers at " +
                     first.address() + ", " + second.address()),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("cannot connect to the broker at " + first.address()),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("cannot connect to the broker at " + second.address()),
            std::string::npos)
      << out;
}

TEST_F(CliFailoverTest, AnEmptyServerInTheListIsAUsageError) {
  auto [code, out] =
      run_command(cli_binary(), {"--server", a_->address() + ",,", "info"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--server"), std::string::npos) << out;
  EXPECT_NE(out.find("empty"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
