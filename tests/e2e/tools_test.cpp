// End to end: the load generator runs against a real broker, so it cannot
// rot.

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e_fixture.hpp"
#include "json_fields.hpp"
#include "raw_client.hpp"

namespace tb::test {
namespace {

using ToolsTest = BrokerTest;

// Returns the path of the load generator.
std::string bench_binary() {
  return std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-bench";
}

// Returns the pid of this process's child named `name`, or -1.
int child_named(const std::string& name) {
  auto* proc = opendir("/proc");
  if (proc == nullptr)
    return -1;
  int found = -1;
  while (auto* entry = readdir(proc)) {
    std::ifstream stat{std::string{"/proc/"} + entry->d_name + "/stat"};
    int pid = 0;
    std::string comm;
    char state = 0;
    int parent = 0;
    if (stat >> pid >> comm >> state >> parent && parent == getpid() &&
        comm == "(" + name + ")")
      found = pid;
  }
  closedir(proc);
  return found;
}

// Returns the client address (`peer=`) of each "session opened" line in
// `log`, in order: sessions on one TCP connection share it.
std::vector<std::string> opened_sessions(const std::string& log) {
  std::vector<std::string> peers;
  std::regex opened{"session opened peer=(\\S+)"};
  for (std::sregex_iterator i{log.begin(), log.end(), opened}, end; i != end;
       ++i)
    peers.push_back((*i)[1]);
  return peers;
}

// Expects the percentiles of a run's latency in order and above zero.
void expect_ordered_latency(const std::string& out) {
  auto p50 = json_number(out, "p50");
  auto p99 = json_number(out, "p99");
  auto p999 = json_number(out, "p99_9");
  auto max = json_number(out, "max");
  EXPECT_GT(p50, 0) << out;
  EXPECT_LE(p50, p99) << out;
  EXPECT_LE(p99, p999) << out;
  EXPECT_LE(p999, max) << out;
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

TEST_F(ToolsTest, BenchLatencyKeepsTheRateAndCountsFromTheSchedule) {
  auto [code, out] =
      run_command(bench_binary(), {"--server", broker_->address(), "--scenario",
                                   "s4", "--rate", "2000", "--messages", "1000",
                                   "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"scenario\":\"s4\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"latency_from\":\"scheduled\""), std::string::npos)
      << out;
  EXPECT_EQ(json_number(out, "sent"), 1000) << out;
  EXPECT_EQ(json_number(out, "received"), 1000) << out;
  EXPECT_EQ(json_number(out, "samples"), 1000) << out;
  EXPECT_EQ(json_number(out, "rate"), 2000) << out;
  // The load generator counts its own CPU apart from the broker's.
  EXPECT_GT(json_number(out, "bench_cpu_s"), 0) << out;
  // The last of 1000 messages at 2000 msgs/s is scheduled at 0.4995 s.
  EXPECT_GE(json_number(out, "publish_s"), 0.4995) << out;
  expect_ordered_latency(out);
}

TEST_F(ToolsTest, BenchWildcardSpreadsOverTopicsUnderOnePattern) {
  auto [code, out] = run_command(
      bench_binary(), {"--server", broker_->address(), "--scenario", "s5",
                       "--topics", "50", "--messages", "2000", "--batch", "100",
                       "--paced", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"pattern\":\"orders.*.created\""), std::string::npos)
      << out;
  EXPECT_EQ(json_number(out, "topics"), 50) << out;
  EXPECT_EQ(json_number(out, "received"), 2000) << out;
  EXPECT_EQ(json_number(out, "out_of_order"), 0) << out;
  EXPECT_GT(json_number(out, "delivered_msgs_per_s"), 0) << out;
  expect_ordered_latency(out);
}

TEST_F(ToolsTest, BenchSeveralPublishersReachEverySubscriberInTheirOrder) {
  auto [code, out] = run_command(
      bench_binary(), {"--server", broker_->address(), "--scenario", "s2",
                       "--publishers", "3", "--messages", "3000", "--batch",
                       "50", "--paced", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "publishers"), 3) << out;
  EXPECT_EQ(json_number(out, "subscribers"), 4) << out;
  EXPECT_EQ(json_number(out, "sent"), 3000) << out;
  EXPECT_EQ(json_number(out, "received"), 12000) << out;
  EXPECT_EQ(json_number(out, "out_of_order"), 0) << out;
}

TEST_F(ToolsTest, BenchQueueWithSeveralPublishersAcksEachMessageOnce) {
  auto [code, out] =
      run_command(bench_binary(),
                  {"--server", broker_->address(), "--scenario", "s3",
                   "--publishers", "2", "--workers", "3", "--messages", "3001",
                   "--batch", "64", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "received"), 3001) << out;
  EXPECT_EQ(json_number(out, "duplicates"), 0) << out;
  EXPECT_EQ(json_number(out, "missing"), 0) << out;
  EXPECT_EQ(json_number(out, "out_of_order"), 0) << out;
}

TEST_F(ToolsTest, BenchIdleReadsTheBrokersMemoryAroundItsSessions) {
  auto pid = child_named("tinybroker");
  ASSERT_GT(pid, 0);
  auto [code, out] =
      run_command(bench_binary(), {"--server", broker_->address(), "--scenario",
                                   "idle", "--sessions", "40", "--broker-pid",
                                   std::to_string(pid), "--json"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "sessions"), 40) << out;
  EXPECT_EQ(json_number(out, "measured"), 40) << out;
  EXPECT_GT(json_number(out, "rss_before_kib"), 0) << out;
  EXPECT_GT(json_number(out, "rss_after_kib"), 0) << out;
  EXPECT_NE(out.find("\"bytes_per_session\""), std::string::npos) << out;
}

TEST_F(ToolsTest, BenchIdleWithoutJsonPrintsOneFigurePerLine) {
  auto pid = child_named("tinybroker");
  ASSERT_GT(pid, 0);
  auto [code, out] = run_command(
      bench_binary(), {"--server", broker_->address(), "--scenario", "idle",
                       "--sessions", "3", "--broker-pid", std::to_string(pid)});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\nmeasured "), std::string::npos) << out;
  EXPECT_NE(out.find("\nbytes per session "), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n') << out;
}

// Issue 15: --connections own gives each idle session its own TCP
// connection (the broker sees one peer address per session), and --settle
// reads the memory a second time.
TEST_F(ToolsTest, BenchIdleWithOwnConnectionsOpensOneConnectionPerSession) {
  auto pid = child_named("tinybroker");
  ASSERT_GT(pid, 0);
  // Waits until the broker logged `n` sessions after the first `before`
  // (another process: polled), and returns how many connections they used.
  auto connections_of = [&](std::size_t before, std::size_t n) {
    auto deadline = std::chrono::steady_clock::now() + patience;
    auto peers = opened_sessions(broker_->output());
    while (peers.size() < before + n &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      peers = opened_sessions(broker_->output());
    }
    EXPECT_EQ(peers.size(), before + n) << broker_->output();
    return std::set<std::string>(peers.begin() + std::min(before, peers.size()),
                                 peers.end())
        .size();
  };
  auto before = opened_sessions(broker_->output()).size();
  auto [code, out] = run_command(
      bench_binary(), {"--server", broker_->address(), "--scenario", "idle",
                       "--sessions", "12", "--connections", "own", "--settle",
                       "0.2", "--broker-pid", std::to_string(pid), "--json"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "measured"), 12) << out;
  EXPECT_GT(json_number(out, "rss_at_once_kib"), 0) << out;
  EXPECT_NE(out.find("\"bytes_per_session_at_once\""), std::string::npos)
      << out;
  EXPECT_EQ(connections_of(before, 12), 12u);
  // Shared (the default): all of them on one connection.
  before = opened_sessions(broker_->output()).size();
  auto shared =
      run_command(bench_binary(), {"--server", broker_->address(), "--scenario",
                                   "idle", "--sessions", "12", "--broker-pid",
                                   std::to_string(pid), "--json"});
  EXPECT_EQ(shared.first, 0) << shared.second;
  EXPECT_EQ(connections_of(before, 12), 1u);
}

// Issue 15: an idle session on its own connection cost 50.5 KB at 200
// sessions before the broker's gRPC settings and lazy queues, 42-43 KB
// after (docs/performance.md, "Memory per session"); the bound sits
// between. Only RSS of a jemalloc build without sanitizers means anything.
TEST_F(ToolsTest, AnIdleSessionOnItsOwnConnectionCostsUnder46KB) {
  if (!rss_is_meaningful || !TINYBROKER_EXPECT_JEMALLOC)
    GTEST_SKIP() << "RSS is not comparable in this build";
  auto pid = child_named("tinybroker");
  ASSERT_GT(pid, 0);
  auto [code, out] = run_command(
      bench_binary(), {"--server", broker_->address(), "--scenario", "idle",
                       "--sessions", "200", "--connections", "own",
                       "--broker-pid", std::to_string(pid), "--json"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_LT(json_number(out, "bytes_per_session"), 46'000) << out;
}

TEST_F(ToolsTest, BenchHeldReadsTheBrokersMemoryAroundAFullGroup) {
  auto pid = child_named("tinybroker");
  ASSERT_GT(pid, 0);
  auto [code, out] = run_command(
      bench_binary(), {"--server", broker_->address(), "--scenario", "held",
                       "--messages", "3000", "--batch", "100", "--broker-pid",
                       std::to_string(pid), "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "messages"), 3000) << out;
  EXPECT_EQ(json_number(out, "measured"), 3000) << out;
  EXPECT_GT(json_number(out, "rss_before_kib"), 0) << out;
  EXPECT_NE(out.find("\"bytes_per_message\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"bytes_beyond_content\""), std::string::npos) << out;
}

TEST_F(ToolsTest, BenchRefusesSettingsItCannotKeep) {
  auto idle = run_command(
      bench_binary(), {"--server", broker_->address(), "--scenario", "idle"});
  EXPECT_EQ(idle.first, 2) << idle.second;
  EXPECT_NE(idle.second.find("--broker-pid"), std::string::npos) << idle.second;
  auto slow =
      run_command(bench_binary(), {"--server", broker_->address(), "--scenario",
                                   "s4", "--rate", "10", "--max-seconds", "5"});
  EXPECT_EQ(slow.first, 2) << slow.second;
  EXPECT_NE(slow.second.find("--max-seconds"), std::string::npos)
      << slow.second;
  auto small =
      run_command(bench_binary(), {"--server", broker_->address(),
                                   "--publishers", "2", "--size", "8"});
  EXPECT_EQ(small.first, 2) << small.second;
  EXPECT_NE(small.second.find("--publishers"), std::string::npos)
      << small.second;
}

TEST_F(ToolsTest, BenchQueueNeedsRoomForTheSequenceNumber) {
  auto [code, out] =
      run_command(bench_binary(), {"--server", broker_->address(), "--scenario",
                                   "queue", "--size", "8"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--size"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
