// End to end: tinybroker-bench's --publish-server and --subscribe-server
// (issue 30, point 5: the cluster figures put publishers and subscribers on
// different nodes) send each role to its own broker; --server still sets up
// and reads the stats.

#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "failover_fixture.hpp"

namespace tb::test {
namespace {

using BenchRolesTest = FailoverTest;

std::string bench_path() {
  return std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-bench";
}

// Returns broker `address`'s Stats as JSON (tinybroker-cli --json stats).
std::string stats_of(const std::string& address) {
  auto [code, out] =
      run_command(cli_binary(), {"--server", address, "--json", "stats"});
  EXPECT_EQ(code, 0) << out;
  return out;
}

TEST_F(BenchRolesTest, EachRoleUsesItsOwnBroker) {
  auto [code, out] =
      run_command(bench_path(),
                  {"--server", a_->address(), "--publish-server", b_->address(),
                   "--subscribe-server", b_->address(), "--messages", "2000",
                   "--paced", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"received\":2000,\"dropped\":0,\"missing\":0"),
            std::string::npos)
      << out;
  EXPECT_NE(stats_of(b_->address()).find("\"published\":2000"),
            std::string::npos);
  EXPECT_EQ(stats_of(a_->address()).find("\"published\":2000"),
            std::string::npos);
}

TEST_F(BenchRolesTest, PublishersAndSubscribersOnIndependentBrokersMeetNot) {
  // Not a cluster: what is published on A never reaches B's subscriber, so
  // the run reports every message missing (exit 1).
  auto [code, out] =
      run_command(bench_path(),
                  {"--server", a_->address(), "--publish-server", a_->address(),
                   "--subscribe-server", b_->address(), "--messages", "200",
                   "--paced", "--json", "--max-seconds", "2"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("\"received\":0"), std::string::npos) << out;
}

TEST_F(BenchRolesTest, ServerListUsesTheFirstThatAnswers) {
  // What `tinybroker-cli --server DEAD,A bench` passes on.
  closed_port dead;
  auto [code, out] = run_command(
      bench_path(),
      {"--server", dead.address() + "," + a_->address(), "--messages", "500",
       "--paced", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"server\":\"" + a_->address() + "\""), std::string::npos)
      << out;
}

TEST_F(BenchRolesTest, AnUnreachableRoleServerIsNamed) {
  closed_port dead;
  auto [code, out] = run_command(
      bench_path(), {"--server", a_->address(), "--subscribe-server",
                     dead.address(), "--messages", "10"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--subscribe-server: cannot connect to the broker at " +
                     dead.address()),
            std::string::npos)
      << out;
}

} // namespace
} // namespace tb::test
