// End to end: the load generator runs against a real broker, so it cannot
// rot.

#include <string>

#include "e2e_fixture.hpp"

namespace tb::test {
namespace {

using ToolsTest = BrokerTest;

// Returns the path of the load generator.
std::string bench_binary() {
  return std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-bench";
}

TEST_F(ToolsTest, BenchFanoutDeliversEverythingAndReportsJson) {
  auto [code, out] = run_command(
      bench_binary(),
      {"--server", broker_->address(), "--messages", "5000", "--subscribers",
       "2", "--batch", "100", "--paced", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"scenario\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"received\":10000,\"dropped\":0,\"missing\":0"),
            std::string::npos)
      << out;
}

TEST_F(ToolsTest, BenchQueueAcksEveryMessageExactlyOnceAndReportsJson) {
  auto [code, out] =
      run_command(bench_binary(),
                  {"--server", broker_->address(), "--scenario", "queue",
                   "--messages", "5000", "--workers", "2", "--max-in-flight",
                   "64", "--batch", "100", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"scenario\":\"queue\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"workers\":2,\"max_in_flight\":64"), std::string::npos)
      << out;
  EXPECT_NE(out.find("\"received\":5000,\"duplicates\":0"), std::string::npos)
      << out;
  EXPECT_NE(out.find("\"missing\":0,\"publish_errors\":0"), std::string::npos)
      << out;
  EXPECT_NE(out.find("\"acked_msgs_per_s\""), std::string::npos) << out;
}

TEST_F(ToolsTest, BenchQueueNeedsRoomForTheSequenceNumber) {
  auto [code, out] =
      run_command(bench_binary(), {"--server", broker_->address(), "--scenario",
                                   "queue", "--size", "8"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--size"), std::string::npos) << out;
}

TEST_F(ToolsTest, BenchWithoutServerIsAUsageError) {
  auto [code, out] = run_command(bench_binary(), {"--messages", "10"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--server"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
