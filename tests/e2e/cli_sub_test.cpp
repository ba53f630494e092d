// End to end: `tinybroker-cli sub` bounded for scripts (`--count` at least
// 1 as for `pub`, `--idle-timeout` with its exit codes), a clean stop on
// Ctrl-C or SIGTERM, and `--name`, the
// name the broker's stats show for the CLI's sessions and group members.

#include <chrono>
#include <csignal>
#include <fstream>
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

// Ctrl-C or SIGTERM ends `sub` cleanly: its stream is closed after the acks
// of what it printed, it says so, and exits 0 (as `stats --watch`), where a
// death by the signal's default action was exit 143.
TEST_F(CliTest, SubStoppedBySigtermClosesItsStreamAndExitsZero) {
  auto sub = start_sub({"stop.>", "--group", "stoppers"});
  auto [code, out] = cli({"pub", "stop.a", "m{{n}}", "--count", "3"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_TRUE(sub->wait_for_output("m3", patience)) << sub->output();
  auto exit = sub->stop(SIGTERM);
  ASSERT_TRUE(exit.has_value()) << sub->output();
  EXPECT_EQ(*exit, 0) << sub->output();
  EXPECT_NE(sub->output().find("stopped by SIGTERM; printed 3"),
            std::string::npos)
      << sub->output();
  EXPECT_TRUE(eventually([&] {
    auto counters = group_counters("stoppers");
    return counters.acked() == 3 && counters.members() == 0;
  })) << group_counters("stoppers").DebugString();
  EXPECT_EQ(group_counters("stoppers").redelivered(), 0u);
  // Ctrl-C the same, on a fan-out subscriber.
  auto fanout = start_sub({"stop.>"});
  exit = fanout->stop(SIGINT);
  ASSERT_TRUE(exit.has_value()) << fanout->output();
  EXPECT_EQ(*exit, 0) << fanout->output();
  EXPECT_NE(fanout->output().find("stopped by SIGINT; printed 0"),
            std::string::npos)
      << fanout->output();
  // With --count not reached, a stop exits 4, as an idle timeout does: a
  // script learns that fewer came than it asked for.
  auto counted = start_sub({"stop.>", "--count", "5"});
  exit = counted->stop(SIGTERM);
  ASSERT_TRUE(exit.has_value()) << counted->output();
  EXPECT_EQ(*exit, 4) << counted->output();
  EXPECT_NE(
      counted->output().find("stopped by SIGTERM: printed 0 of --count 5"),
      std::string::npos)
      << counted->output();
}

// Returns true if the main thread of process `pid` blocks `signal`
// (its SigBlk mask in /proc).
bool blocks_signal(pid_t pid, int signal) {
  std::ifstream status{"/proc/" + std::to_string(pid) + "/status"};
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigBlk:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> (signal - 1)) & 1u;
  return false;
}

// A stop while the connection is still being waited for ends `sub` once
// that wait is over, with exit 0 and a line saying so: here the address
// takes the connection and never speaks.
TEST_F(CliTest, SubStoppedWhileConnectingSaysSoAndExitsZero) {
  silent_listener silent;
  child_process sub{
      cli_binary(),
      {"--server", silent.address(), "--timeout", "1s", "sub", "x.>"}};
  // Its main thread blocks SIGINT before it connects (a stop before that is
  // the default action, exit 130).
  ASSERT_TRUE(eventually([&] { return blocks_signal(sub.pid(), SIGINT); }))
      << sub.output();
  auto exit = sub.stop(SIGINT);
  ASSERT_TRUE(exit.has_value()) << sub.output();
  EXPECT_EQ(*exit, 0) << sub.output();
  EXPECT_NE(sub.output().find("stopped by SIGINT before a connection was made"),
            std::string::npos)
      << sub.output();
}

TEST_F(CliTest, StatsShowEachSessionsAndMembersName) {
  auto named =
      start_sub({"jobs.>", "--group", "workers", "--name", "resize-worker-1"});
  auto plain = start_sub({"jobs.>", "--group", "workers"});
  auto [code, out] = cli({"stats", "--members", "--sessions"});
  ASSERT_EQ(code, 0) << out;
  // Member rows: GROUP NAME PEER SUBSCRIPTION ...
  auto rows = lines_starting_with(out, "workers ");
  ASSERT_EQ(rows.size(), 3u) << out; // the group's counters, two members
  std::vector<std::string> names;
  for (size_t i = 1; i < rows.size(); ++i) {
    std::istringstream row{rows[i]};
    std::string group, name;
    row >> group >> name;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"resize-worker-1", "tinybroker-cli"}))
      << out;
  // Session rows start with NAME; the stats call itself is a unary call.
  EXPECT_EQ(lines_starting_with(out, "resize-worker-1 ").size(), 1u) << out;
  EXPECT_EQ(lines_starting_with(out, "tinybroker-cli ").size(), 1u) << out;
  std::tie(code, out) = cli({"stats", "--json", "--members"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"name\":\"resize-worker-1\""), std::string::npos) << out;
}

TEST_F(CliTest, ABadNameIsAUsageErrorNamingTheFlag) {
  auto [code, out] = cli({"sub", "x.>", "--name", std::string(129, 'n')});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--name"), std::string::npos) << out;
  EXPECT_NE(out.find("at most 128"), std::string::npos) << out;
  std::tie(code, out) = cli({"health", "--name", "tab\there"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("control character"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
