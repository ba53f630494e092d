// Consumer groups across nodes as real processes on loopback (issue 30
// points 3-4, docs/cluster.md "Groups across nodes"): publisher, owner and
// members on different nodes; one message to exactly one member; acks,
// nacks and redelivery across nodes. A member's node or the owner killed is
// in cluster_groups_kill_test.cpp. A few seconds each.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/cluster/cluster_groups_fixture.hpp"

namespace tb::test {
namespace {

TEST_F(ClusterGroupsTest, EachMessageGoesToExactlyOneMemberAcrossNodes) {
  start_three();
  auto& n1 = *nodes[0];
  auto& n2 = *nodes[1];
  auto& n3 = *nodes[2];
  auto g = group_owned_by(n3, "work.>");
  ASSERT_FALSE(g.empty());
  auto c1 = connect(n1);
  auto c2 = connect(n2);
  auto on_n1 = c1->open_session();
  auto on_n2 = c2->open_session();
  join(*on_n1, 1, g, "work.>");
  join(*on_n2, 1, g, "work.>");
  // Publisher on n1, owner n3, members on n1 and n2.
  constexpr int total = 100;
  publish_range(*c1, "work.items", 0, total);
  std::vector<pb::Delivery> a, b;
  auto deadline = std::chrono::steady_clock::now() + group_patience;
  while (a.size() + b.size() < size_t{total} &&
         std::chrono::steady_clock::now() < deadline) {
    for (auto& d : on_n1->receive(total, 50ms))
      a.push_back(d);
    for (auto& d : on_n2->receive(total, 50ms))
      b.push_back(d);
  }
  std::multiset<std::string> seen;
  for (auto& p : payloads(a))
    seen.insert(p);
  for (auto& p : payloads(b))
    seen.insert(p);
  ASSERT_EQ(seen.size(), size_t{total});
  for (int i = 0; i < total; ++i)
    EXPECT_EQ(seen.count(std::to_string(i)), 1u) << "message " << i;
  EXPECT_FALSE(a.empty()) << "round robin reaches the member on n1";
  EXPECT_FALSE(b.empty()) << "round robin reaches the member on n2";
  ASSERT_TRUE(on_n1->ack(ids(a)));
  ASSERT_TRUE(on_n2->ack(ids(b)));
  auto acked = 0ull;
  for (auto until = std::chrono::steady_clock::now() + group_patience;
       std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(20ms))
    if ((acked = group_info(n3, g).counters().acked()) == total)
      break;
  EXPECT_EQ(acked, uint64_t{total}) << "the owner n3 counts every ack";
  EXPECT_TRUE(on_n1->receive(1, 200ms).empty()) << "a duplicate";
  EXPECT_TRUE(on_n2->receive(1, 200ms).empty()) << "a duplicate";
}

TEST_F(ClusterGroupsTest, AcksNacksAndRedeliveryCrossNodes) {
  start_three();
  auto& n1 = *nodes[0];
  auto& n2 = *nodes[1];
  auto& n3 = *nodes[2];
  auto g = group_owned_by(n3, "jobs.>", 1000);
  ASSERT_FALSE(g.empty());
  auto c1 = connect(n1);
  auto c2 = connect(n2);
  auto member = c2->open_session();
  join(*member, 7, g, "jobs.>");

  publish_range(*c1, "jobs.a", 0, 3);
  auto first = member->receive(3, group_patience);
  ASSERT_EQ(first.size(), 3u);
  std::map<std::string, pb::Delivery> by_payload;
  for (auto& d : first)
    by_payload[d.payload()] = d;
  ASSERT_TRUE(member->ack({by_payload["0"].delivery_id()}));
  ASSERT_TRUE(member->nack({by_payload["1"].delivery_id()}));
  // "1" comes back at once (attempt 2) and is acked; "2" stays unanswered
  // and comes back after ack_wait (1 s).
  auto nacked = member->receive(1, group_patience);
  ASSERT_EQ(nacked.size(), 1u);
  EXPECT_EQ(nacked[0].payload(), "1");
  EXPECT_EQ(nacked[0].attempt(), 2u);
  ASSERT_TRUE(member->ack(ids(nacked)));
  auto expired = member->receive(1, group_patience);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].payload(), "2");
  EXPECT_EQ(expired[0].attempt(), 2u);
  EXPECT_EQ(expired[0].subscription_id(), 7u);
  ASSERT_TRUE(member->ack(ids(expired)));
  auto info = group_info(n3, g);
  for (auto until = std::chrono::steady_clock::now() + group_patience;
       info.counters().acked() < 3 && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(20ms))
    info = group_info(n3, g);
  EXPECT_EQ(info.counters().acked(), 3u);
  EXPECT_EQ(info.counters().in_flight(), 0u);
  EXPECT_TRUE(member->receive(1, 200ms).empty());
}

} // namespace
} // namespace tb::test
