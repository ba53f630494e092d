// End to end: `tinybroker-cli sub` bounded for scripts (`--count` at least
// 1 as for `pub`, `--idle-timeout` with its exit codes).

#include <chrono>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli_fixture.hpp"

namespace tb::test {
namespace {

using std::chrono::steady_clock;

TEST_F(CliTest, SubCountZeroIsAUsageErrorAsForPub) {
  // It meant "forever", and with --timeout 2s it hung.
  auto started = steady_clock::now();
  auto [code, out] = cli({"sub", "x.>", "--count", "0", "--timeout", "2s"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--count"), std::string::npos) << out;
  EXPECT_NE(out.find("must be at least 1"), std::string::npos) << out;
  EXPECT_LT(steady_clock::now() - started, std::chrono::seconds(5));
  std::tie(code, out) = cli({"pub", "x.y", "d", "--count", "0"});
  EXPECT_EQ(code, 2) << out;
  std::tie(code, out) = cli({"sub", "x.>", "--idle-timeout", "0"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--idle-timeout"), std::string::npos) << out;
}

TEST_F(CliTest, SubIdleTimeoutWithoutCountEndsQuietlyWithExitZero) {
  auto started = steady_clock::now();
  auto [code, out] = cli({"sub", "quiet.>", "--idle-timeout", "300ms"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("subscribed to quiet.>"), std::string::npos) << out;
  EXPECT_NE(out.find("no delivery for 300ms; printed 0"), std::string::npos)
      << out;
  EXPECT_GE(steady_clock::now() - started, std::chrono::milliseconds(300));
}

TEST_F(CliTest, SubIdleTimeoutBeforeTheCountExitsFourSayingHowMany) {
  auto sub = start_sub({"part.>", "--count", "3", "--idle-timeout", "1s"});
  auto [code, out] = cli({"pub", "part.a", "only one"});
  ASSERT_EQ(code, 0) << out;
  auto exit = sub->wait_exit(patience);
  ASSERT_TRUE(exit.has_value()) << sub->output();
  EXPECT_EQ(*exit, 4) << sub->output();
  EXPECT_NE(sub->output().find("only one"), std::string::npos) << sub->output();
  EXPECT_NE(sub->output().find("no delivery for 1s: printed 1 of --count 3"),
            std::string::npos)
      << sub->output();
}

TEST_F(CliTest, SubCountReachedWithinTheIdleTimeoutExitsZero) {
  auto sub = start_sub({"done.>", "--count", "2", "--idle-timeout", "5s"});
  auto [code, out] = cli({"pub", "done.a", "m{{n}}", "--count", "2"});
  ASSERT_EQ(code, 0) << out;
  auto exit = sub->wait_exit(patience);
  ASSERT_TRUE(exit.has_value()) << sub->output();
  EXPECT_EQ(*exit, 0) << sub->output();
}

} // namespace
} // namespace tb::test
