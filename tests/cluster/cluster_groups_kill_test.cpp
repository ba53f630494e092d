// Consumer groups across nodes as real processes on loopback when a node
// is killed (issue 30 points 3-4, docs/cluster.md "What a client sees when
// a group's node dies"): a member's node killed (its deliveries go to the
// other member); the owner killed (every pending publish answered
// UNAVAILABLE, the members re-join and the group works on its next owner).
// A few seconds each.

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "tests/cluster/cluster_groups_fixture.hpp"

namespace tb::test {
namespace {

TEST_F(ClusterGroupsTest, AKilledMembersDeliveriesGoToTheOtherMember) {
  start_three();
  auto& n1 = *nodes[0];
  auto& n2 = *nodes[1];
  auto& n3 = *nodes[2];
  auto g = group_owned_by(n3, "tasks.>");
  ASSERT_FALSE(g.empty());
  auto c1 = connect(n1);
  auto c2 = connect(n2);
  auto c3 = connect(n3);
  auto doomed = c1->open_session();
  auto survivor = c2->open_session();
  join(*doomed, 1, g, "tasks.>");
  join(*survivor, 1, g, "tasks.>");
  // Publisher on n3 (the owner), members on n1 and n2; n1 is killed with
  // its deliveries unanswered.
  constexpr int total = 20;
  publish_range(*c3, "tasks.t", 0, total);
  auto held = doomed->receive(total, 300ms);
  auto kept = survivor->receive(total, 300ms);
  ASSERT_EQ(held.size() + kept.size(), size_t{total});
  ASSERT_FALSE(held.empty());
  signal(n1, SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  auto moved = survivor->receive(held.size(), group_patience);
  auto took = millis_since(killed);
  std::cout << "[ figure ] SIGKILL of a member's node: " << moved.size()
            << " deliveries redelivered to the member on n2 in " << took
            << " ms" << std::endl;
  ASSERT_EQ(moved.size(), held.size());
  std::set<std::string> all;
  for (auto& p : payloads(kept))
    all.insert(p);
  for (auto& p : payloads(moved))
    all.insert(p);
  EXPECT_EQ(all.size(), size_t{total}) << "0 lost";
  EXPECT_LT(took, 1000) << "redelivery at the member's down message";
}

TEST_F(ClusterGroupsTest, AKilledOwnerAnswersPendingPublishesAndMembersRejoin) {
  start_three();
  auto& n1 = *nodes[0];
  auto& n2 = *nodes[1];
  auto& n3 = *nodes[2];
  // Owned by n3; once n3 is gone, by n2.
  auto g = group_owned_by(n3, "orders.>", 30000, "n2");
  ASSERT_FALSE(g.empty());
  auto c1 = connect(n1);
  auto c2 = connect(n2);
  auto member1 = c1->open_session();
  auto member2 = c2->open_session();
  join(*member1, 3, g, "orders.>");
  join(*member2, 4, g, "orders.>");
  // A first publish (the publisher's session learns the group's name, for
  // its errors); then the owner hangs: publishes on n1 wait for it; then it
  // dies.
  auto publisher = c1->open_session();
  ASSERT_TRUE(publisher->publish({{"orders.x", "first", {}, {}}}, true, 99));
  ASSERT_TRUE(
      publisher->wait_for(pb::ServerFrame::kPublishConfirm, group_patience)
          .has_value());
  for (auto* m : {member1.get(), member2.get()})
    for (auto& d : m->receive(1, 100ms))
      m->ack({d.delivery_id()});
  signal(n3, SIGSTOP);
  constexpr int frames = 5;
  for (int i = 0; i < frames; ++i)
    ASSERT_TRUE(publisher->publish(
        {{"orders.x", "p" + std::to_string(i), {}, {}}}, true, 100 + i));
  EXPECT_FALSE(publisher->next(100ms).has_value())
      << "the hung owner cannot have answered";
  signal(n3, SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  int answered = 0;
  long long last = 0;
  while (answered < frames) {
    auto frame =
        publisher->wait_for(pb::ServerFrame::kPublishConfirm, group_patience);
    ASSERT_TRUE(frame.has_value())
        << answered << " of " << frames << " pending publishes answered";
    last = millis_since(killed);
    auto& results = frame->publish_confirm().results();
    ASSERT_EQ(results.size(), 1);
    EXPECT_EQ(results[0].error().code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(results[0].error().reason(), "node_unavailable");
    EXPECT_NE(results[0].error().message().find("group \"" + g + "\""),
              std::string::npos)
        << results[0].error().message();
    ++answered;
  }
  std::cout << "[ figure ] SIGKILL of the owner: " << frames
            << " pending publishes answered UNAVAILABLE within " << last
            << " ms (dead_after " << group_dead_after.count() << " ms)"
            << std::endl;
  EXPECT_LE(last, (group_dead_after + 100ms).count());
  // The members re-join by themselves; the group works on its next owner
  // (n2) once a member re-created it there: until then a publish routes
  // nowhere.
  auto rejoin_started = std::chrono::steady_clock::now();
  bool probed = false;
  for (int k = 0; !probed && millis_since(rejoin_started) < 5000; ++k) {
    publish_range(*c1, "orders.probe", k, k + 1);
    for (auto* m : {member1.get(), member2.get()})
      for (auto& d : m->receive(1, 20ms)) {
        probed = true;
        m->ack({d.delivery_id()});
      }
  }
  ASSERT_TRUE(probed) << "the group did not work again on its next owner";
  std::cout << "[ figure ] SIGKILL of the owner: the group works again on "
            << "its next owner " << millis_since(killed) << " ms after"
            << std::endl;
  auto listed = owner_of(n1, g);
  EXPECT_TRUE(listed.empty() || listed == "n2") << listed;
  const std::string owner = "n2";
  publish_range(*c1, "orders.y", 1000, 1010);
  std::set<std::string> got;
  auto deadline = std::chrono::steady_clock::now() + group_patience;
  while (got.size() < 10 && std::chrono::steady_clock::now() < deadline) {
    for (auto& d : member1->receive(10, 50ms)) {
      if (d.topic() == "orders.y")
        got.insert(d.payload());
      EXPECT_EQ(d.subscription_id(), 3u);
    }
    for (auto& d : member2->receive(10, 50ms)) {
      if (d.topic() == "orders.y")
        got.insert(d.payload());
      EXPECT_EQ(d.subscription_id(), 4u);
    }
  }
  EXPECT_EQ(got.size(), 10u) << "the group works again on " << owner;
  if (got.size() != 10u)
    std::cout << "n2 lists " << group_info(n2, g).ShortDebugString()
              << "\nn1 lists " << group_info(n1, g).ShortDebugString()
              << std::endl;
  if (got.size() != 10u && getenv("TB_TEST_DUMP_LOGS") != nullptr)
    for (auto& n : nodes)
      if (n->process)
        std::cout << "==== " << n->name << "\n"
                  << n->process->output() << std::endl;
  EXPECT_FALSE(
      member1->wait_for(pb::ServerFrame::kUnsubscribed, 10ms).has_value());
  EXPECT_FALSE(
      member2->wait_for(pb::ServerFrame::kUnsubscribed, 10ms).has_value());
  // ClusterStats counts each node's lost membership and its re-join.
  for (auto* n : {&n1, &n2}) {
    auto c = stats(*n);
    EXPECT_EQ(c.memberships_lost(), 1u) << n->name;
    EXPECT_EQ(c.memberships_rejoined(), 1u) << n->name;
    EXPECT_EQ(c.memberships_ended(), 0u) << n->name;
  }
}

} // namespace
} // namespace tb::test
