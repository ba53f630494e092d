// Tests of a session whose group lives on a node that is lost (cluster,
// issue 30 points 3-4; docs/cluster.md, "What a client sees when a group's
// node dies"), point 2: memberships re-join the group on its next owner by
// themselves, back off while the router still names the lost group, give
// up after 30 s with `Unsubscribed`, and end at an unsubscribe; a deleted
// group is not re-joined. How a lost node is simulated is in
// group_node_loss_fixture.hpp.

#include <string>
#include <vector>

#include "tests/actors/group_node_loss_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

// -- memberships (point 2) ----------------------------------------------------

TEST_F(GroupNodeLoss, MemberRejoinsTheGroupOnItsNextOwnerKeepingItsId) {
  auto member = remote_session();
  auto pub = spawn_session();
  join(member, 5, "g", "orders.>");
  publish(pub, "orders.1", 1, "before");
  auto first = member.sink->deliveries();
  ASSERT_EQ(first.size(), 1u);
  auto lost = group("g");
  lose_node_of(lost);
  pass(200ms); // the router may still name the lost group: backoff
  auto next = group("g");
  ASSERT_TRUE(next) << "the re-join created the group on its next owner";
  EXPECT_NE(next, lost);
  publish(pub, "orders.2", 1, "after");
  auto all = member.sink->deliveries();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].payload(), "after0");
  EXPECT_EQ(all[1].subscription_id(), 5u);
  EXPECT_TRUE(member.sink->of_kind(kind::kUnsubscribed).empty());
  // The answer to the lost group's delivery goes nowhere; the new one acks.
  ack(member, {first[0].delivery_id(), all[1].delivery_id()});
  EXPECT_EQ(counters("g").acked, 1u);
  EXPECT_EQ(counters("g").in_flight, 0u);
  // ClusterStats counts the lost membership and its re-join.
  auto& rejoins = *deref<session_state>(member.hdl).ctx.rejoins;
  EXPECT_EQ(rejoins.lost(), 1u);
  EXPECT_EQ(rejoins.rejoined(), 1u);
  EXPECT_EQ(rejoins.ended(), 0u);
}

TEST_F(GroupNodeLoss, RejoinBacksOffWhileTheRouterStillNamesTheLostGroup) {
  auto member = remote_session();
  auto pub = spawn_session();
  install_silent("g", "orders.>", pub, "orders.1");
  join(member, 5, "g", "orders.>");
  ASSERT_EQ(member.sink->of_kind(kind::kSubscribed).size(), 1u);
  // The router does not drop the lost group (its peer_down is late): every
  // attempt fails until it does.
  lose_node_of(silent);
  pass(500ms);
  EXPECT_EQ(group("g"), silent) << "no group created yet";
  deref<router_state>(router).groups.erase("g"); // the router's peer_down
  pass(1s + 10ms);                               // at most the largest backoff
  ASSERT_TRUE(group("g"));
  publish(pub, "orders.2", 1, "after");
  auto all = member.sink->deliveries();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].payload(), "after0");
  EXPECT_EQ(all[0].subscription_id(), 5u);
}

TEST_F(GroupNodeLoss, RejoiningGivesUpAfterThirtySecondsWithUnsubscribed) {
  auto member = remote_session();
  auto pub = spawn_session();
  install_silent("g", "orders.>", pub, "orders.1");
  join(member, 5, "g", "orders.>");
  lose_node_of(silent);
  pass(29s, 100ms);
  EXPECT_TRUE(member.sink->of_kind(kind::kUnsubscribed).empty());
  pass(2s, 100ms);
  auto ended = member.sink->of_kind(kind::kUnsubscribed);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].unsubscribed().subscription_id(), 5u);
  EXPECT_NE(ended[0].unsubscribed().reason().find(
                "group \"g\": its owner node is gone and re-joining it "
                "failed: no live owner within 30000 ms"),
            std::string::npos)
      << ended[0].unsubscribed().reason();
  EXPECT_TRUE(deref<session_state>(member.hdl).memberships.empty());
  // ClusterStats counts the lost membership and its end.
  auto& rejoins = *deref<session_state>(member.hdl).ctx.rejoins;
  EXPECT_EQ(rejoins.lost(), 1u);
  EXPECT_EQ(rejoins.rejoined(), 0u);
  EXPECT_EQ(rejoins.ended(), 1u);
}

TEST_F(GroupNodeLoss, UnsubscribeWhileRejoiningEndsIt) {
  auto member = remote_session();
  auto pub = spawn_session();
  install_silent("g", "orders.>", pub, "orders.1");
  join(member, 5, "g", "orders.>");
  lose_node_of(silent);
  pass(100ms);
  send_frame(member, unsubscribe_frame(next_request_id(), 5));
  run();
  auto ended = member.sink->of_kind(kind::kUnsubscribed);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].unsubscribed().reason(), "");
  deref<router_state>(router).groups.erase("g");
  pass(2s, 100ms);
  EXPECT_FALSE(group("g")) << "no attempt after the unsubscribe";
}

TEST_F(GroupNodeLoss, DeletedGroupKeepsTodaysBehaviourAndIsNotRejoined) {
  auto member = remote_session();
  join(member, 5, "g", "orders.>");
  EXPECT_EQ(query<uint64_t>(router, delete_atom_v, std::string{"g"}), 0u);
  pass(2s, 100ms);
  auto ended = member.sink->of_kind(kind::kUnsubscribed);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].unsubscribed().reason(), "the group \"g\" was deleted");
  EXPECT_FALSE(group("g"));
}

} // namespace
} // namespace tb::test
