// The majority rule with 3 processes on loopback (issue 32 point 3,
// docs/cluster.md "Majority rule"): two nodes stopped with SIGSTOP, the
// third sees 1 of 3 and refuses a publish to its group with UNAVAILABLE
// naming the counts while it serves fan-out; the two resumed, group
// publishes work again within dead_after + 1 s. About 5 s.

#include <chrono>
#include <csignal>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "actors/router/router_directory.hpp"
#include "client/connection.hpp"
#include "client/session.hpp"
#include "tests/cluster/cluster_fixture.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

/// The test nodes' dead_after (cluster_fixture.cpp).
constexpr auto quorum_dead_after = 500ms;

class ClusterQuorumTest : public ClusterFixture {
protected:
  /// Creates, through node `n`, a group on `pattern` whose HRW owner among
  /// the three nodes is `n` itself; returns its name.
  std::string group_owned_by(const cluster_node& n,
                             const std::string& pattern) {
    for (int i = 0; i < 1000; ++i) {
      auto name = "q" + std::to_string(i);
      auto best = nodes.front()->name;
      for (auto& other : nodes)
        if (hrw_beats(other->name, best, name))
          best = other->name;
      if (best != n.name)
        continue;
      pb::CreateGroupRequest req;
      req.set_name(name);
      req.mutable_settings()->set_pattern(pattern);
      pb::GroupInfo info;
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 5s);
      auto status =
          pb::Broker::NewStub(client::make_channel(n.process->address()))
              ->CreateGroup(&ctx, req, &info);
      EXPECT_TRUE(status.ok()) << status.error_message();
      return name;
    }
    ADD_FAILURE() << "no group name owned by " << n.name;
    return {};
  }

  /// Publishes one message to `topic` through `conn`; returns its result.
  static pb::PublishResult publish_one(client::connection& conn,
                                       const std::string& topic) {
    std::vector<pb::PublishResult> results;
    auto status = conn.publish({{topic, "x", {}, {}}}, &results);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return results.empty() ? pb::PublishResult{} : results[0];
  }

  /// Waits until node `n` sees `visible` nodes; false after `timeout`.
  bool wait_visible(const cluster_node& n, uint32_t visible,
                    std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      if (stats(n).visible_nodes() == visible)
        return true;
      std::this_thread::sleep_for(20ms);
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }
};

TEST_F(ClusterQuorumTest, AMinorityNodeRefusesGroupPublishesAndServesFanOut) {
  start_three();
  auto& n1 = *nodes[0];
  auto& n2 = *nodes[1];
  auto& n3 = *nodes[2];
  auto g = group_owned_by(n1, "jobs.>");
  ASSERT_FALSE(g.empty());
  auto before = stats(n1);
  EXPECT_EQ(before.configured_nodes(), 3u);
  EXPECT_EQ(before.visible_nodes(), 3u);
  auto c1 = connect(n1);
  auto reader = c1->open_session();
  ASSERT_TRUE(reader->subscribe(1, "news.>"));
  ASSERT_TRUE(reader->wait_for(pb::ServerFrame::kSubscribed, 5s));
  EXPECT_FALSE(publish_one(*c1, "jobs.1").has_error());

  // n2 and n3 stop: n1 sees 1 of 3 once dead_after passed.
  ASSERT_TRUE(n2.process->pause());
  ASSERT_TRUE(n3.process->pause());
  std::this_thread::sleep_for(quorum_dead_after);
  ASSERT_TRUE(wait_visible(n1, 1, 5s)) << n1.process->output();
  auto refused = publish_one(*c1, "jobs.2");
  ASSERT_TRUE(refused.has_error());
  EXPECT_EQ(refused.error().code(), 14); // UNAVAILABLE
  EXPECT_EQ(refused.error().reason(), "no_quorum");
  EXPECT_NE(refused.error().message().find(
                "no quorum: this node sees 1 of 3 configured nodes (needs 2)"),
            std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("\"jobs.2\""), std::string::npos)
      << refused.error().message();
  // Fan-out is served locally.
  EXPECT_FALSE(publish_one(*c1, "news.1").has_error());
  auto got = reader->receive(1, 5s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].topic(), "news.1");
  auto during = stats(n1);
  EXPECT_EQ(during.configured_nodes(), 3u);
  EXPECT_EQ(during.visible_nodes(), 1u);
  EXPECT_GE(during.quorum_refusals(), 1u);
  EXPECT_TRUE(n1.process->wait_for_occurrences("cluster quorum lost", 1, 1s))
      << n1.process->output();

  // Both resume: group publishes work again within dead_after + 1 s.
  auto resumed = std::chrono::steady_clock::now();
  signal(n2, SIGCONT);
  signal(n3, SIGCONT);
  bool served = false;
  while (!served && millis_since(resumed) < 3000) {
    served = !publish_one(*c1, "jobs.3").has_error();
    if (!served)
      std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(served) << n1.process->output();
  auto back_ms = millis_since(resumed);
  RecordProperty("group_publishes_back_after_ms", std::to_string(back_ms));
  std::cout << "group publishes served again " << back_ms
            << " ms after SIGCONT\n";
  EXPECT_LE(back_ms, (quorum_dead_after + 1s).count());
  EXPECT_TRUE(n1.process->wait_for_occurrences("cluster quorum back", 1, 1s))
      << n1.process->output();
}

} // namespace
} // namespace tb::test
