// tinybroker-bench across a cluster's nodes (docs/performance.md,
// docs/cluster.md "Figures"): --subscribe-server A,B,C spreads the fan-out
// subscribers over the nodes, and the run checks that every node's
// subscriber got every message in order and once.

#include <string>

#include "tests/cluster/cluster_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

// Returns node `s`'s view of the peer called `name` (empty if none).
pb::ClusterPeer bench_peer(const pb::ClusterStats& s, const std::string& name) {
  for (auto& p : s.peers())
    if (p.name() == name)
      return p;
  return {};
}

TEST_F(ClusterFixture, BenchSpreadsItsSubscribersOverTheNodesGiven) {
  auto& n1 = add_node("n1");
  auto& n2 = add_node("n2");
  auto& n3 = add_node("n3");
  for (auto* n : {&n1, &n2, &n3})
    ASSERT_TRUE(start(*n));
  for (auto* n : {&n1, &n2, &n3})
    ASSERT_TRUE(wait_synced(*n, 2, 5s)) << n->name;
  auto a1 = n1.process->address();
  auto all = a1 + "," + n2.process->address() + "," + n3.process->address();
  auto [code, out] = run_command(
      TINYBROKER_BENCH,
      {"--server", a1, "--publish-server", a1, "--subscribe-server", all,
       "--subscribers", "3", "--scenario", "fanout", "--messages", "3000",
       "--paced", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"received\":9000,\"dropped\":0,\"missing\":0"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"out_of_order\":0,"), std::string::npos) << out;
  // One subscriber on each of n2 and n3: each message crossed to each once.
  auto s1 = stats(n1);
  EXPECT_EQ(bench_peer(s1, "n2").messages_sent(), 3000u);
  EXPECT_EQ(bench_peer(s1, "n3").messages_sent(), 3000u);
}

TEST_F(ClusterFixture, BenchNamesAnUnreachableNodeOfItsSubscribers) {
  auto& n1 = add_node("n1");
  ASSERT_TRUE(start(n1));
  auto a1 = n1.process->address();
  auto [code, out] =
      run_command(TINYBROKER_BENCH, {"--server", a1, "--subscribe-server",
                                     a1 + ",127.0.0.1:1", "--messages", "10"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--subscribe-server: cannot connect to the broker at "
                     "127.0.0.1:1"),
            std::string::npos)
      << out;
}

} // namespace
} // namespace tb::test
