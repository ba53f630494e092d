// End to end: tinybroker-nats-bench, the peer's side of
// scripts/cq_floor.py's `nats` form (docs/performance.md, "Side by side with
// NATS core"), against a real nats-server on loopback: every message
// arrives once and in order, S4 measures each one's latency, the server's
// CPU is reported, and a server that is not there is a clear error.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "broker_process.hpp"
#include "json_fields.hpp"

namespace tb::test {
namespace {

std::string nats_bench() {
  return std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-nats-bench";
}

class NatsBenchTest : public ::testing::Test {
protected:
  void SetUp() override {
    port_ = std::to_string(free_loopback_port());
    server_ = std::make_unique<child_process>(
        NATS_SERVER, std::vector<std::string>{"-a", "127.0.0.1", "-p", port_});
    ASSERT_TRUE(
        server_->wait_for_output("Server is ready", std::chrono::seconds(20)))
        << server_->output();
  }

  // Runs the tool against the server with `args` and --json; returns its
  // report (the JSON line).
  std::string run(std::vector<std::string> args) {
    args.insert(args.end(),
                {"--server", "127.0.0.1:" + port_, "--json", "--broker-pid",
                 std::to_string(server_->pid()), "--max-seconds", "60"});
    auto [code, out] = run_command(nats_bench(), args);
    EXPECT_EQ(code, 0) << out;
    auto line = out.rfind("{\"scenario\"");
    return line == std::string::npos ? out : out.substr(line);
  }

  std::string port_;
  std::unique_ptr<child_process> server_;
};

TEST_F(NatsBenchTest, S1DeliversEveryMessageOnceInOrder) {
  auto report = run({"--scenario", "s1", "--messages", "20000"});
  EXPECT_EQ(json_number(report, "received"), 20000);
  EXPECT_EQ(json_number(report, "missing"), 0);
  EXPECT_EQ(json_number(report, "out_of_order"), 0);
  EXPECT_GT(json_number(report, "delivered_msgs_per_s"), 0);
  EXPECT_GE(json_number(report, "broker_cpu_s"), 0);
}

TEST_F(NatsBenchTest, S2PacedDeliversToEachOfFourSubscribers) {
  auto report = run({"--scenario", "s2", "--messages", "50000", "--paced"});
  EXPECT_EQ(json_number(report, "subscribers"), 4);
  EXPECT_EQ(json_number(report, "received"), 200000);
  EXPECT_EQ(json_number(report, "missing"), 0);
  EXPECT_EQ(json_number(report, "out_of_order"), 0);
}

TEST_F(NatsBenchTest, S4MeasuresEachMessagesLatencyAtTheRate) {
  auto report =
      run({"--scenario", "s4", "--rate", "2000", "--messages", "2000"});
  EXPECT_EQ(json_number(report, "received"), 2000);
  EXPECT_EQ(json_number(report, "samples"), 2000);
  auto p50 = json_number(report, "p50");
  EXPECT_GT(p50, 0);
  EXPECT_GE(json_number(report, "p99"), p50);
  // 2,000 messages at 2,000/s take about a second, not as fast as possible.
  EXPECT_GT(json_number(report, "publish_s"), 0.9);
}

TEST(NatsBenchErrors, AServerThatIsNotThereIsAClearError) {
  auto port = std::to_string(free_loopback_port());
  auto [code, out] = run_command(
      nats_bench(), {"--server", "127.0.0.1:" + port, "--messages", "10"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("nats://127.0.0.1:" + port), std::string::npos) << out;
  EXPECT_NE(out.find("No server available"), std::string::npos) << out;
  EXPECT_NE(out.find("is nats-server listening there?"), std::string::npos)
      << out;
}

TEST(NatsBenchErrors, AListenerThatIsNotNatsIsNamed) {
  // A listening socket that never speaks (as tinybroker's gRPC port does
  // not speak NATS): libnats waits for the INFO line and gives up.
  silent_listener silent;
  ASSERT_NE(silent.port(), 0);
  auto port = std::to_string(silent.port());
  auto [code, out] = run_command(
      nats_bench(), {"--server", "127.0.0.1:" + port, "--messages", "10"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("cannot connect to nats://127.0.0.1:" + port),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("is nats-server listening there?"), std::string::npos)
      << out;
}

TEST(NatsBenchErrors, VersionAndHelpAsEveryProgram) {
  auto [code, out] = run_command(nats_bench(), {"--version"});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out.rfind("tinybroker-nats-bench ", 0), 0u) << out;
  auto [help_code, help] = run_command(nats_bench(), {"--help"});
  EXPECT_EQ(help_code, 0);
  EXPECT_NE(help.find("--scenario"), std::string::npos) << help;
}

TEST(NatsBenchErrors, AnUnknownScenarioIsRefused) {
  auto [code, out] = run_command(nats_bench(), {"--scenario", "s9"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("s9"), std::string::npos) << out;
  EXPECT_NE(out.find("see --help"), std::string::npos) << out;
  auto [size_code, size_out] = run_command(nats_bench(), {"--size", "8"});
  EXPECT_EQ(size_code, 2);
  EXPECT_NE(size_out.find("--size"), std::string::npos) << size_out;
}

} // namespace
} // namespace tb::test
