// Per-peer traffic across real nodes (issue 30 point 2, docs/cluster.md
// "Stats, /metrics, the CLI"): a message crosses to a peer once however
// many of its subscribers match, and Stats, `tinybroker-cli cluster` and
// /metrics count it on both sides.

#include "client/connection.hpp"
#include "client/session.hpp"
#include "tests/cluster/cluster_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

// Returns node `n`'s view of the peer called `name` (empty if none).
pb::ClusterPeer traffic_peer(const pb::ClusterStats& s,
                             const std::string& name) {
  for (auto& p : s.peers())
    if (p.name() == name)
      return p;
  return {};
}

// Expects `text` to contain `part`.
void traffic_expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos)
      << "expected \"" << part << "\" in:\n"
      << text;
}

TEST_F(ClusterFixture, AMessageCrossesToAPeerOnceWhateverItsSubscribers) {
  auto& n1 = add_node("n1");
  auto& n2 = add_node("n2");
  auto& n3 = add_node("n3");
  n1.args = {"--metrics-listen", "127.0.0.1:0"};
  for (auto* n : {&n1, &n2, &n3})
    ASSERT_TRUE(start(*n));
  for (auto* n : {&n1, &n2, &n3})
    ASSERT_TRUE(wait_synced(*n, 2, 5s)) << n->name;
  client::connection c1{n1.process->address()};
  client::connection c2{n2.process->address()};
  // Four subscriptions on n2 whose patterns overlap, on three sessions.
  std::vector<std::unique_ptr<client::session>> subs;
  std::vector<std::string> patterns{"copy.>", "copy.*.x", "copy.a.x", "copy.>"};
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (i < 3)
      subs.push_back(c2.open_session());
    auto& s = i < 3 ? *subs[i] : *subs[0];
    ASSERT_TRUE(s.subscribe(i + 1, patterns[i]));
    ASSERT_TRUE(s.wait_for(pb::ServerFrame::kSubscribed, 5s)) << patterns[i];
  }
  constexpr int total = 200;
  std::vector<client::outgoing_message> batch;
  for (int i = 0; i < total; ++i)
    batch.push_back({"copy.a.x", std::to_string(i), {}, {}});
  std::vector<pb::PublishResult> results;
  ASSERT_TRUE(c1.publish(batch, &results).ok());
  EXPECT_EQ(subs[0]->receive(2 * total, 5s).size(), size_t{2 * total});
  EXPECT_EQ(subs[1]->receive(total, 5s).size(), size_t{total});
  EXPECT_EQ(subs[2]->receive(total, 5s).size(), size_t{total});
  auto from_n1 = traffic_peer(stats(n2), "n1");
  EXPECT_EQ(from_n1.messages_received(), uint64_t{total});
  EXPECT_GE(from_n1.batches_received(), 1u);
  EXPECT_EQ(from_n1.messages_sent(), 0u);
  auto to_n2 = traffic_peer(stats(n1), "n2");
  EXPECT_EQ(to_n2.messages_sent(), uint64_t{total});
  EXPECT_GE(to_n2.batches_sent(), 1u);
  EXPECT_EQ(to_n2.dropped(), 0u);
  EXPECT_EQ(to_n2.interest_patterns(), 3u); // copy.>, copy.*.x, copy.a.x
  EXPECT_TRUE(to_n2.interest_synced());
  EXPECT_EQ(traffic_peer(stats(n1), "n3").messages_sent(), 0u);
  EXPECT_EQ(traffic_peer(stats(n3), "n1").messages_received(), 0u);
  // Published counts what this node's publishers sent: the messages that
  // came over the link are n1's, not n2's as well.
  EXPECT_EQ(full_stats(n1).broker().published(), uint64_t{total});
  EXPECT_EQ(full_stats(n2).broker().published(), 0u);

  // The CLI shows sent, received and dropped per peer.
  auto [code, out] = run_command(
      TINYBROKER_CLI, {"--server", n1.process->address(), "cluster"});
  EXPECT_EQ(code, 0) << out;
  traffic_expect_contains(out, "SENT       RECEIVED   DROPPED");
  auto line = out.substr(out.find("\nn2 "));
  line = line.substr(0, line.find('\n', 1));
  traffic_expect_contains(line, " 200        0          0");
  std::tie(code, out) = run_command(
      TINYBROKER_CLI, {"--server", n1.process->address(), "--json", "cluster"});
  EXPECT_EQ(code, 0) << out;
  traffic_expect_contains(out, "\"interest_patterns\":3,\"interest_synced\":"
                               "true,\"messages_sent\":200,");
  traffic_expect_contains(out, "\"messages_received\":0,\"batches_received\":"
                               "0,\"dropped\":0,");

  // /metrics: one counter per peer for each.
  auto metrics = metrics_of(n1);
  ASSERT_FALSE(metrics.empty());
  auto labels = [&](const cluster_node& n) {
    return "{peer=\"" + n.name + "\",address=\"" + cluster_address(n) + "\"}";
  };
  traffic_expect_contains(metrics,
                          "# TYPE tinybroker_cluster_peer_messages_sent_total "
                          "counter\n");
  traffic_expect_contains(metrics,
                          "tinybroker_cluster_peer_messages_sent_total" +
                              labels(n2) + " 200\n");
  traffic_expect_contains(metrics,
                          "tinybroker_cluster_peer_messages_sent_total" +
                              labels(n3) + " 0\n");
  traffic_expect_contains(metrics,
                          "tinybroker_cluster_peer_messages_received_total" +
                              labels(n2) + " 0\n");
  traffic_expect_contains(metrics, "tinybroker_cluster_peer_dropped_total" +
                                       labels(n2) + " 0\n");
}

} // namespace
} // namespace tb::test
