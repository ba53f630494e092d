// Replicated groups through a partition and a rolling restart, as three
// broker processes on loopback (issue 32 points 3-5, docs/cluster.md
// "Replicas"): the owner cut off from the two others by the kernel's
// packet filter (cluster_partition.hpp) while publishers and workers run,
// and each of the three nodes restarted in turn (SIGTERM, start again,
// wait for ready and every group's replica in sync). 0 confirmed messages
// lost, duplicates counted and bounded. The partition tool's own test runs
// without replicas. 10-40 s each.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "client/connection.hpp"
#include "tests/cluster/cluster_partition.hpp"
#include "tests/cluster/cluster_replica_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

class ClusterPartitionTest : public ReplicaFixture {
protected:
  void SetUp() override {
    if (auto why = loopback_partition::why_unavailable(); !why.empty()) {
      if (::geteuid() != 0)
        GTEST_SKIP() << why;
      FAIL() << why;
    }
  }

  /// Cuts node `n` off from the other nodes' cluster ports.
  void isolate(loopback_partition& cut, cluster_node& n) {
    std::string why;
    ASSERT_TRUE(cut.isolate(n.process->pid(), n.port, other_ports(n), &why))
        << why;
  }
};

// Returns the output of `nft list tables`.
std::string nft_tables() {
  std::string tables;
  if (auto* p = ::popen("nft list tables 2>/dev/null", "r")) {
    char buf[256];
    while (auto n = std::fread(buf, 1, sizeof(buf), p))
      tables.append(buf, n);
    ::pclose(p);
  }
  return tables;
}

TEST_F(ClusterPartitionTest, ToolCutsOneNodeOffAndHeals) {
  start_three();
  auto& n1 = *nodes[0];
  auto& n2 = *nodes[1];
  auto& n3 = *nodes[2];
  {
    loopback_partition cut;
    isolate(cut, n3);
    EXPECT_TRUE(wait_state(n1, "n3", "down", 3s)) << stats(n1).DebugString();
    EXPECT_TRUE(wait_state(n2, "n3", "down", 3s)) << stats(n2).DebugString();
    EXPECT_TRUE(wait_state(n3, "n1", "down", 3s)) << stats(n3).DebugString();
    EXPECT_TRUE(wait_state(n3, "n2", "down", 3s)) << stats(n3).DebugString();
    EXPECT_EQ(state_of(n1, "n2"), "synced") << "n1 and n2 still talk";
    EXPECT_EQ(state_of(n2, "n1"), "synced") << "n1 and n2 still talk";
    EXPECT_GT(cut.dropped(), 0u);
    // Clients still reach the isolated node.
    auto c3 = connect(n3);
    EXPECT_TRUE(c3->wait_connected(2s));
  } // healed
  for (auto& n : nodes)
    EXPECT_TRUE(wait_synced(*n, 2, 10s)) << n->name << " after the heal";
  auto tables = nft_tables();
  EXPECT_EQ(tables.find(loopback_partition{}.table()), std::string::npos)
      << "the table is gone: " << tables;
}

// A table left by a process that no longer runs (killed mid-partition) is
// deleted by the next partition; one of a running process is kept.
TEST_F(ClusterPartitionTest, TablesOfProcessesThatAreGoneAreDeleted) {
  pid_t child = ::fork();
  if (child == 0)
    ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);
  auto gone = "tb_partition_" + std::to_string(child);
  auto alive = "tb_partition_" + std::to_string(::getppid());
  for (auto& table : {gone, alive})
    ASSERT_EQ(std::system(("nft add table inet " + table).c_str()), 0);
  EXPECT_NE(nft_tables().find(gone), std::string::npos);
  EXPECT_GE(loopback_partition::remove_stale_tables(), 1);
  auto tables = nft_tables();
  EXPECT_EQ(tables.find(gone + "\n"), std::string::npos) << tables;
  EXPECT_NE(tables.find(alive + "\n"), std::string::npos) << tables;
  std::system(("nft delete table inet " + alive).c_str());
}

TEST_F(ClusterPartitionTest, IsolatedOwnerRefusesAndTheOthersServeTheGroup) {
  if (auto why = replicas_missing(); !why.empty())
    GTEST_SKIP() << why;
  start_three();
  auto g = placed_group("n3", "n2", "part.>");
  ASSERT_FALSE(g.empty());
  ASSERT_TRUE(wait_replica_synced(g)) << owners_listed(g);
  workload_options o;
  o.group = g;
  o.pattern = "part.>";
  o.prefix = "part";
  cluster_workload w{o};
  w.use_nodes({"n1", "n2"}, {"n1", "n2"});
  fill_book(w);
  w.start();
  ASSERT_TRUE(eventually([&] { return w.confirmed() >= 1000; }));
  auto& n1 = node_named("n1");
  auto& n2 = node_named("n2");
  auto& n3 = node_named("n3");
  auto c3 = connect(n3);
  {
    loopback_partition cut;
    EXPECT_GT(pile_up(w, g, "n3"), 0u);
    isolate(cut, n3);
    w.hold(false);
    // The majority side (n1, n2) promotes n2 and keeps serving.
    EXPECT_TRUE(eventually([&] {
      return group_info(n1, g).owner_node() == "n2" &&
             group_info(n2, g).owner_node() == "n2";
    })) << owners_listed(g);
    auto before = w.confirmed();
    EXPECT_TRUE(eventually([&] { return w.confirmed() >= before + 1000; }))
        << "the majority side confirms";
    // The isolated node sees 1 of 3: it refuses group publishes.
    std::vector<pb::PublishResult> results;
    grpc::Status status;
    bool refused = eventually([&] {
      results.clear();
      status = c3->publish({{"part.isolated", "x", {}, {}}}, &results, 2s);
      return status.ok() && results.size() == 1 && results[0].has_error() &&
             results[0].error().code() == grpc::StatusCode::UNAVAILABLE;
    });
    EXPECT_TRUE(refused) << status.error_message() << " "
                         << (results.empty() ? std::string{}
                                             : results[0].ShortDebugString());
    if (!results.empty())
      std::cout << "[ result ] the isolated node answers a group publish: "
                << results[0].error().ShortDebugString() << std::endl;
  } // healed
  for (auto& n : nodes)
    EXPECT_TRUE(wait_synced(*n, 2, 10s)) << n->name << " after the heal";
  EXPECT_TRUE(eventually([&] { return owner_set(g).size() == 1; }))
      << "one owner after the heal: " << owners_listed(g);
  EXPECT_TRUE(eventually([&] {
    auto info1 = group_info(n1, g), info3 = group_info(n3, g);
    return info1.owner_node() == info3.owner_node() &&
           !info1.owner_node().empty();
  })) << owners_listed(g);
  std::cout << "[ result ] after the heal: owners " << owners_listed(g)
            << std::endl;
  w.stop_publishing();
  bool drained = w.drain(20s);
  w.stop();
  auto r = w.check();
  std::cout << "[ result ] " << r.summary() << std::endl;
  EXPECT_TRUE(drained);
  EXPECT_EQ(r.lost, 0u);
  EXPECT_EQ(r.same_attempt, 0u);
  EXPECT_LE(r.duplicates, 2 * w.in_flight_bound());
  if (HasFailure())
    dump(g);
}

class ClusterRollingRestartTest : public ReplicaFixture {};

TEST_F(ClusterRollingRestartTest, RestartingEachNodeInTurnLosesNothing) {
  if (auto why = replicas_missing(); !why.empty())
    GTEST_SKIP() << why;
  start_three();
  // One group per owner, so each restart moves one owner and one replica.
  std::vector<std::string> groups{placed_group("n1", "n2", "roll.>"),
                                  placed_group("n2", "n3", "rollb.>"),
                                  placed_group("n3", "n1", "rollc.>")};
  for (auto& g : groups) {
    ASSERT_FALSE(g.empty());
    ASSERT_TRUE(wait_replica_synced(g)) << owners_listed(g);
  }
  workload_options o;
  o.group = groups[0];
  o.pattern = "roll.>";
  o.prefix = "roll";
  cluster_workload w{o};
  w.use_nodes({"n1", "n2", "n3"}, {"n1", "n2", "n3"});
  fill_book(w);
  w.start();
  ASSERT_TRUE(eventually([&] { return w.confirmed() >= 1000; }));
  for (auto& n : nodes) {
    auto started = std::chrono::steady_clock::now();
    auto held = pile_up(w, groups[0], group_info(*n, groups[0]).owner_node());
    w.set_address(n->name, "");
    ASSERT_TRUE(restart(*n)) << n->name << " did not start again";
    w.hold(false);
    w.set_address(n->name, n->process->address());
    for (auto& other : nodes)
      ASSERT_TRUE(wait_synced(*other, 2, replica_patience)) << other->name;
    for (auto& g : groups)
      ASSERT_TRUE(wait_replica_synced(g))
          << g << " has no replica in sync: " << owners_listed(g);
    auto before = w.confirmed();
    ASSERT_TRUE(eventually([&] { return w.confirmed() >= before + 500; }));
    std::cout << "[ figure ] rolling restart of " << n->name << ": "
              << millis_since(started) << " ms to ready and every replica "
              << "in sync (" << held << " messages held at the start); owners "
              << owners_listed(groups[0]) << std::endl;
  }
  w.stop_publishing();
  bool drained = w.drain(20s);
  w.stop();
  auto r = w.check();
  std::cout << "[ result ] " << r.summary() << std::endl;
  EXPECT_TRUE(drained);
  EXPECT_EQ(r.lost, 0u) << "confirmed messages lost";
  EXPECT_EQ(r.same_attempt, 0u);
  EXPECT_EQ(r.unknown, 0u);
  EXPECT_LE(r.duplicates, 3 * w.in_flight_bound());
  EXPECT_EQ(r.duplicates, r.redeliveries);
  if (HasFailure())
    dump(groups[0]);
}

} // namespace
} // namespace tb::test
