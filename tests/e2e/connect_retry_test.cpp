// End to end: a connection attempt that gets no answer is abandoned after
// `client::connect_attempt_timeout` (2 s) and another one made, in the
// client library, the CLI and the load generator alike (docs/client.md,
// "Connect"). A connect whose SYN is lost (on a lossy network, or behind a
// packet filter's stale rule) looks to gRPC like a TCP proxy that accepts
// and never forwards: both wait for the broker's first
// HTTP/2 frame until the attempt's deadline. gRPC's own default deadline is
// 20 s.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "cli_fixture.hpp"
#include "tcp_proxy.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;

// Returns the path of tool `name` (tinybroker-cli, tinybroker-bench).
std::string tool(const std::string& name) {
  return std::string{TINYBROKER_TOOLS_DIR} + "/" + name;
}

// Runs `binary` with `args` and no TINYBROKER_SERVER; returns its exit code,
// its output and how long it ran.
struct timed_run {
  int code;
  std::string out;
  std::chrono::steady_clock::duration took;
};

timed_run run_timed(const std::string& binary,
                    const std::vector<std::string>& args) {
  std::vector<std::string> argv{"-u", "TINYBROKER_SERVER", binary};
  argv.insert(argv.end(), args.begin(), args.end());
  auto start = std::chrono::steady_clock::now();
  auto [code, out] = run_command("/usr/bin/env", argv);
  return {code, std::move(out), std::chrono::steady_clock::now() - start};
}

using ConnectRetryTest = BrokerTest;

// The library's connection: the first attempt is left unanswered, the
// second (2 s later) reaches the broker, and the connection works.
TEST_F(ConnectRetryTest, AConnectionGetsPastAConnectThatIsNeverAnswered) {
  tcp_proxy proxy{broker_->address(), 1};
  client::connection conn{proxy.address()};
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(conn.wait_connected(8s))
      << "still not connected 8 s after a lost first attempt";
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, client::connect_attempt_timeout - 200ms);
  EXPECT_LT(took, 6s);
  EXPECT_EQ(proxy.accepted(), 1);
  client::outgoing_message message;
  message.topic = "retry.topic";
  message.payload = "after a lost connect";
  std::vector<tinybroker::v1::PublishResult> results;
  auto status = conn.publish({message}, &results);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(results.size(), 1u);
}

// The library keeps the limit a caller sets itself.
TEST_F(ConnectRetryTest, AChannelsOwnConnectTimeoutIsKept) {
  tcp_proxy proxy{broker_->address(), 1};
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20000);
  client::connection conn{client::make_channel(proxy.address(), args)};
  EXPECT_FALSE(conn.wait_connected(4s))
      << "a 20 s attempt was cut short by the library's default";
  EXPECT_EQ(proxy.accepted(), 0);
}

// tinybroker-cli waits 5 s for a connection by default (--timeout): a lost
// first attempt no longer uses all of it.
TEST_F(ConnectRetryTest, TheCliGetsPastAConnectThatIsNeverAnswered) {
  tcp_proxy proxy{broker_->address(), 1};
  auto run = run_timed(tool("tinybroker-cli"),
                       {"--server", proxy.address(), "health"});
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_LT(run.took, 5s) << run.out;
  EXPECT_EQ(proxy.accepted(), 1);
}

// The load generator, the same way: its publisher's first attempt is lost.
TEST_F(ConnectRetryTest, TheLoadGeneratorGetsPastAConnectThatIsNeverAnswered) {
  tcp_proxy proxy{broker_->address(), 1};
  auto run = run_timed(tool("tinybroker-bench"),
                       {"--server", proxy.address(), "--messages", "2000",
                        "--paced", "--json", "--max-seconds", "30"});
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("\"received\":2000,\"dropped\":0,\"missing\":0"),
            std::string::npos)
      << run.out;
  EXPECT_GE(proxy.accepted(), 1);
}

} // namespace
} // namespace tb::test
