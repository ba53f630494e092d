// What an operator sees of a cluster (issue 30 point 5, docs/cluster.md):
// `tinybroker-cli cluster` (text and --json), `info`, and the cluster
// series of /metrics; on a single node, no cluster at all.

#include "tests/cluster/cluster_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;

// Runs tinybroker-cli against the broker at `address` with `args`.
std::pair<int, std::string> cluster_cli(const std::string& address,
                                        std::vector<std::string> args) {
  args.insert(args.begin(), {"--server", address});
  return run_command(TINYBROKER_CLI, args);
}

// Expects `text` to contain `part`.
void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos)
      << "expected \"" << part << "\" in:\n"
      << text;
}

TEST_F(ClusterFixture, TheCliListsTheNodesAndTheirLinkStates) {
  auto& n1 = add_node("n1");
  auto& n2 = add_node("n2");
  n1.args = {"--metrics-listen", "127.0.0.1:0"};
  ASSERT_TRUE(start(n1));
  ASSERT_TRUE(start(n2));
  ASSERT_TRUE(wait_synced(n1, 1, 5s));
  auto [code, out] = cluster_cli(n1.process->address(), {"cluster"});
  EXPECT_EQ(code, 0) << out;
  expect_contains(out, "node n1 at " + cluster_address(n1) +
                           ", ready, 1 of 1 peers synced");
  expect_contains(out, "n2");
  expect_contains(out, cluster_address(n2));
  expect_contains(out, "synced");
  std::tie(code, out) =
      cluster_cli(n1.process->address(), {"--json", "cluster"});
  EXPECT_EQ(code, 0) << out;
  expect_contains(out, "{\"cluster\":true,\"node_name\":\"n1\"");
  expect_contains(out, "\"name\":\"n2\",\"address\":\"" + cluster_address(n2) +
                           "\",\"state\":\"synced\"");
  std::tie(code, out) = cluster_cli(n1.process->address(), {"info"});
  expect_contains(out, "cluster   node n1, listening for its peers on " +
                           cluster_address(n1));
  // /metrics: the nodes up and the state of each link.
  auto metrics = metrics_of(n1);
  ASSERT_FALSE(metrics.empty());
  expect_contains(metrics, "tinybroker_cluster_nodes 2\n");
  expect_contains(metrics, "tinybroker_cluster_ready 1\n");
  expect_contains(metrics, "tinybroker_cluster_peer_state{peer=\"n2\","
                           "address=\"" +
                               cluster_address(n2) +
                               "\",state=\"synced\"} 1\n");
  signal(n2, SIGKILL);
  ASSERT_TRUE(wait_state(n1, "n2", "down", 2s));
  std::tie(code, out) = cluster_cli(n1.process->address(), {"cluster"});
  expect_contains(out, "0 of 1 peers synced");
  expect_contains(out, "down");
}

TEST(ClusterSingleNode, HasNoClusterSection) {
  broker_process broker;
  ASSERT_TRUE(broker.wait_ready());
  auto [code, out] = cluster_cli(broker.address(), {"cluster"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "single node: the broker has no [cluster] in its config\n");
  std::tie(code, out) = cluster_cli(broker.address(), {"--json", "cluster"});
  expect_contains(out, "{\"cluster\":false,\"node_name\":\"\"");
  EXPECT_EQ(broker.output().find("cluster node"), std::string::npos);
}

} // namespace
} // namespace tb::test
