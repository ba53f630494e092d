// The replicas' figures that need no load generator (issue 32 point 6,
// docs/cluster.md "Replicas: figures"), as short tests that print
// "[ figure ]" lines for scripts/replica_figures.py: the publish confirm
// latency at 5k msgs/s with replicas = 1 against replicas = 0 (same
// cluster, same publisher node, rounds alternating), and the memory a held
// message costs on the replica against the owner. The time from the
// owner's SIGKILL to the first delivery by the new owner is
// ClusterReplicaTest.NewOwnerDeliversWithinDeadAfter. About 20 s.

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <thread>

#include "client/connection.hpp"
#include "client/session.hpp"
#include "tests/cluster/cluster_replica_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;
using figure_clock = std::chrono::steady_clock;

/// Returns process `pid`'s resident memory in KiB (0 if unknown).
long long figure_rss_kib(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoll(line.substr(6));
  return 0;
}

/// p50 and p99 of one round, microseconds.
struct figure_latency {
  double p50 = 0, p99 = 0;
  uint64_t errors = 0;
};

class ReplicaFiguresTest : public ReplicaFixture {
protected:
  void SetUp() override {
    if (auto why = replicas_missing(); !why.empty())
      GTEST_SKIP() << why;
  }

  /// Publishes `count` messages of 128 bytes to `topic` through `conn`,
  /// one per frame with a confirm, at `rate` a second; returns the confirm
  /// latencies' p50 and p99.
  static figure_latency confirm_latency(client::connection& conn,
                                        const std::string& topic, int count,
                                        double rate) {
    auto session = conn.open_session();
    std::vector<std::atomic<int64_t>> sent(static_cast<size_t>(count));
    auto start = figure_clock::now();
    std::thread sender{[&] {
      std::string payload(128, 'x');
      for (int i = 0; i < count; ++i) {
        auto due = start + std::chrono::duration_cast<figure_clock::duration>(
                               std::chrono::duration<double>(i / rate));
        std::this_thread::sleep_until(due);
        sent[static_cast<size_t>(i)] =
            figure_clock::now().time_since_epoch().count();
        session->publish({{topic, payload, {}, {}}}, true,
                         static_cast<uint64_t>(i + 1));
      }
    }};
    std::vector<double> us;
    figure_latency result;
    auto deadline =
        figure_clock::now() + std::chrono::seconds(10) +
        std::chrono::milliseconds(static_cast<int>(1000.0 * count / rate));
    while (us.size() + result.errors < static_cast<size_t>(count) &&
           figure_clock::now() < deadline) {
      auto frame = session->next(200ms);
      if (!frame || !frame->has_publish_confirm())
        continue;
      auto now = figure_clock::now().time_since_epoch().count();
      auto& c = frame->publish_confirm();
      for (auto& r : c.results())
        result.errors += r.has_error() ? 1 : 0;
      auto i = c.request_id() - 1;
      if (i < sent.size())
        us.push_back(static_cast<double>(now - sent[i].load()) / 1000.0);
    }
    sender.join();
    session->close(2s);
    if (us.empty())
      return result;
    std::sort(us.begin(), us.end());
    result.p50 = us[us.size() / 2];
    result.p99 = us[std::min(us.size() - 1, us.size() * 99 / 100)];
    return result;
  }
};

TEST_F(ReplicaFiguresTest, ConfirmLatencyAt5kWithAndWithoutReplica) {
  start_three();
  // Both groups owned by n2 (replica n3), the publisher on n1: the only
  // difference is the copy to n3 before the confirm.
  auto g0 = placed_group("n2", "n3", "plain.>", 30000, 0);
  auto g1 = placed_group("n2", "n3", "copied.>", 30000, 1);
  ASSERT_FALSE(g0.empty());
  ASSERT_FALSE(g1.empty());
  ASSERT_TRUE(wait_replica_synced(g1)) << owners_listed(g1);
  auto c1 = connect(node_named("n1"));
  constexpr int per_round = 10000; // 2 s at 5k msgs/s
  std::vector<figure_latency> plain, copied;
  for (int round = 0; round < 4; ++round) {
    bool first_plain = round % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      bool is_plain = (k == 0) == first_plain;
      auto r = confirm_latency(*c1, is_plain ? "plain.x" : "copied.x",
                               per_round, 5000);
      EXPECT_EQ(r.errors, 0u);
      (is_plain ? plain : copied).push_back(r);
      std::cout << "round " << round + 1
                << (is_plain ? " replicas=0" : " replicas=1") << ": p50 "
                << r.p50 << " us, p99 " << r.p99 << " us" << std::endl;
    }
  }
  auto median = [](std::vector<figure_latency> xs, bool p99) {
    std::vector<double> v;
    for (auto& x : xs)
      v.push_back(p99 ? x.p99 : x.p50);
    std::sort(v.begin(), v.end());
    return (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  auto p50_0 = median(plain, false), p50_1 = median(copied, false);
  auto p99_0 = median(plain, true), p99_1 = median(copied, true);
  std::cout << "[ figure ] publish confirm latency at 5k msgs/s (publisher "
               "n1, owner n2, replica n3): replicas=0 p50 "
            << p50_0 << " us p99 " << p99_0 << " us; replicas=1 p50 " << p50_1
            << " us p99 " << p99_1 << " us; p50 +" << p50_1 - p50_0
            << " us (target +200)" << std::endl;
  EXPECT_GT(p50_1, 0);
}

TEST_F(ReplicaFiguresTest, ReplicaMemoryPerHeldMessage) {
#if defined(__SANITIZE_ADDRESS__) || defined(TINYBROKER_TSAN)
  // Redzones and the quarantine change what an allocation costs in RSS.
  GTEST_SKIP() << "RSS is not comparable in a sanitizer build";
#endif
  start_three();
  auto g = placed_group("n2", "n3", "held.>");
  ASSERT_FALSE(g.empty());
  ASSERT_TRUE(wait_replica_synced(g)) << owners_listed(g);
  auto& n2 = node_named("n2");
  auto& n3 = node_named("n3");
  std::this_thread::sleep_for(500ms);
  auto owner_before = figure_rss_kib(n2.process->pid());
  auto replica_before = figure_rss_kib(n3.process->pid());
  // 200,000 messages of 128 bytes, held (the group has no member).
  constexpr int total = 200000;
  auto c1 = connect(node_named("n1"));
  std::string payload(128, 'x');
  for (int i = 0; i < total; i += 1000) {
    std::vector<client::outgoing_message> batch(
        1000, client::outgoing_message{"held.x", payload, {}, {}});
    std::vector<pb::PublishResult> results;
    ASSERT_TRUE(c1->publish(batch, &results, 20s).ok());
    for (auto& r : results)
      ASSERT_FALSE(r.has_error()) << r.error().message();
  }
  ASSERT_TRUE(eventually([&] {
    return group_info(n2, g).counters().pending() == uint64_t{total};
  }));
  // Every publish was confirmed, so the replica holds them all.
  std::this_thread::sleep_for(1s);
  auto owner_per =
      (figure_rss_kib(n2.process->pid()) - owner_before) * 1024.0 / total;
  auto replica_per =
      (figure_rss_kib(n3.process->pid()) - replica_before) * 1024.0 / total;
  std::cout << "[ figure ] memory per held message (128 B payload, " << total
            << " held): owner n2 " << owner_per << " B, replica n3 "
            << replica_per << " B (target: replica <= owner)" << std::endl;
  EXPECT_GT(owner_per, 128.0);
  EXPECT_LE(replica_per, owner_per * 1.25) << "the replica costs more";
}

} // namespace
} // namespace tb::test
