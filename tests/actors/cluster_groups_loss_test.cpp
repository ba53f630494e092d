// Groups across nodes when a node dies (issue 30 points 3 and 4,
// docs/cluster.md "Groups across nodes"), nodes in one actor system as in
// cluster_groups_test.cpp: a dead owner's groups leave every route, what
// waited on it is answered, a lost group is created again on its next
// owner (config groups too), and a dead member node's deliveries are
// requeued at once.

#include <string>
#include <utility>
#include <vector>

#include "actors/router/router_directory.hpp"
#include "tests/actors/cluster_nodes_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

TEST_F(ClusterGroups, PeerDownDropsTheDeadOwnersGroupsFromEveryRouteAtOnce) {
  auto n2 = spawn_node("n2");
  connect("n1", router, "n2", n2);
  auto name = name_owned_by("n2", {"n1", "n2"});
  auto member = spawn_session();
  join(member, 1, name, "t.>");
  auto pub = spawn_session();
  publish(pub, "t.a", 1);
  ASSERT_EQ(route_at(router, "t.a")->groups.size(), 1u);
  peer_down(router, "n2");
  EXPECT_EQ(state_of(router).groups.count(name), 0u);
  EXPECT_EQ(state_of(router).groups_lost, 1u);
  EXPECT_TRUE(route_at(router, "t.a")->groups.empty());
  EXPECT_EQ(router_stats().groups, 0u);
  // Stats: ClusterStats groups_owned, groups_remote, groups_lost.
  auto directory =
      query<tb::directory_stats>(router, tb::stats_atom_v, tb::cluster_atom_v);
  EXPECT_EQ(directory.owned, 0u);
  EXPECT_EQ(directory.remote, 0u);
  EXPECT_EQ(directory.lost, 1u);
  auto at_owner =
      query<tb::directory_stats>(n2, tb::stats_atom_v, tb::cluster_atom_v);
  EXPECT_EQ(at_owner.owned, 1u);
}

TEST_F(ClusterGroups, APendingJoinToADeadOwnerIsAnsweredNodeUnavailable) {
  auto n2 = spawn_node("n2");
  connect("n1", router, "n2", n2);
  auto name = name_owned_by("n2", {"n1", "n2"});
  auto first = spawn_session();
  join(first, 1, name, "t.>");
  auto group = group_at(n2, name);
  ASSERT_TRUE(group);
  // The group never answers the second join: its node dies meanwhile (CAF
  // 0.17 would never complete the request).
  auto second = spawn_session();
  send_frame(second, join_frame(next_request_id(), 1, "t.>", name));
  run_except(group);
  EXPECT_TRUE(second.sink->of_kind(kind::kSubscribed).empty());
  EXPECT_TRUE(errors(second).empty());
  self->send(router, tb::peer_down_atom_v, std::string{"n2"});
  run_except(group);
  auto failed = errors(second);
  ASSERT_EQ(failed.size(), 1u);
  auto& error = failed[0].error().error();
  EXPECT_EQ(error.code(), 14) << error.message(); // UNAVAILABLE
  EXPECT_EQ(error.reason(), "node_unavailable");
  EXPECT_NE(error.message().find("the node n2 that owns group \"" + name +
                                 "\" is gone"),
            std::string::npos)
      << error.message();
  EXPECT_TRUE(state_of(router).pending.empty());
}

TEST_F(ClusterGroups, APendingCreateForwardedToADeadOwnerIsAnswered) {
  auto n2 = spawn_node("n2");
  connect("n1", router, "n2", n2);
  auto name = name_owned_by("n2", {"n1", "n2"});
  auto answer = self->request(router, caf::infinite, tb::create_atom_v, name,
                              group_settings("t.>"));
  run_except(n2); // n2 never answers
  EXPECT_TRUE(self->mailbox().empty());
  self->send(router, tb::peer_down_atom_v, std::string{"n2"});
  run_except(n2);
  ASSERT_FALSE(self->mailbox().empty());
  answer.receive(
      [](tb::group_info&) { ADD_FAILURE() << "created on a dead node"; },
      [](caf::error& err) {
        auto info = tb::to_error_info(err);
        EXPECT_EQ(info.code, tb::ec::node_unavailable) << info.text;
      });
}

TEST_F(ClusterGroups, ALostGroupIsCreatedAgainOnTheNextOwner) {
  auto n2 = spawn_node("n2");
  auto n3 = spawn_node("n3");
  connect("n1", router, "n2", n2);
  connect("n1", router, "n3", n3);
  connect("n2", n2, "n3", n3);
  auto name = name_owned_by("n2", {"n1", "n2", "n3"});
  auto member = spawn_session();
  join(member, 1, name, "t.>");
  ASSERT_EQ(owner_at(router, name), "n2");
  peer_down(router, "n2");
  peer_down(n3, "n2");
  EXPECT_EQ(owner_at(router, name), "");
  EXPECT_EQ(owner_at(n3, name), "");
  // The next join (the member's session re-joining) creates it on the HRW
  // owner over {n1, n3}.
  auto next = tb::hrw_owner(state_of(router), name);
  auto again = session_on(n3);
  join(again, 1, name, "t.>");
  ASSERT_EQ(again.sink->of_kind(kind::kSubscribed).size(), 1u);
  EXPECT_EQ(owner_at(router, name), next);
  EXPECT_EQ(owner_at(n3, name), next);
  EXPECT_EQ(group_at(router, name), group_at(n3, name));
}

TEST_F(ClusterGroups, AMemberNodesDeathRequeuesItsDeliveriesAtOnce) {
  auto n2 = spawn_node("n2");
  auto n3 = spawn_node("n3");
  connect("n1", router, "n2", n2);
  connect("n1", router, "n3", n3);
  connect("n2", n2, "n3", n3);
  auto name = name_owned_by("n2", {"n1", "n2", "n3"});
  auto a = spawn_session(); // a member on n1
  auto b = session_on(n3);  // a member on n3
  join(a, 1, name, "t.>", 1);
  join(b, 1, name, "t.>", 1);
  auto pub = session_on(n2);
  publish(pub, "t.x", 1);
  auto& holder = a.sink->payloads().empty() ? b : a;
  auto& other = a.sink->payloads().empty() ? a : b;
  ASSERT_EQ(holder.sink->payloads(), (strings{"m0"}));
  // The holder's session ends (its node died): the group's monitor of the
  // member's session gives the requeue, no ack_wait timeout needed.
  self->send_exit(holder.hdl, caf::exit_reason::remote_link_unreachable);
  run();
  EXPECT_EQ(other.sink->payloads(), (strings{"m0"}));
}

TEST_F(ClusterGroups, ConfigGroupsMoveToTheirNextOwnerWhenTheOwnerDies) {
  // A config group owned by n2 over {n1, n2, n3}, and by n3 over {n1, n3}.
  std::string name;
  for (int k = 0; k < 1000 && name.empty(); ++k) {
    auto candidate = "c" + std::to_string(k);
    if (tb::hrw_beats("n2", "n1", candidate) &&
        tb::hrw_beats("n2", "n3", candidate) &&
        tb::hrw_beats("n3", "n1", candidate))
      name = candidate;
  }
  ASSERT_FALSE(name.empty());
  std::vector<std::pair<std::string, tb::group_settings>> config{
      {name, group_settings("jobs.>")}};
  auto n2 = spawn_node("n2", config);
  auto n3 = spawn_node("n3", config);
  connect("n1", router, "n2", n2);
  connect("n1", router, "n3", n3);
  connect("n2", n2, "n3", n3);
  // After the first sync every node creates its config groups: found or
  // created on their HRW owner.
  for (auto node : {n2, n3})
    query<tb::group_info>(node, tb::create_atom_v, name,
                          group_settings("jobs.>"));
  ASSERT_EQ(owner_at(router, name), "n2");
  ASSERT_EQ(owner_at(n3, name), "n2");
  peer_down(router, "n2");
  peer_down(n3, "n2");
  // n3 is the next owner: it created the group again and told n1.
  EXPECT_EQ(owner_at(n3, name), "n3");
  EXPECT_EQ(owner_at(router, name), "n3");
  EXPECT_EQ(group_at(router, name), group_at(n3, name));
  EXPECT_EQ(state_of(router).groups_lost, 1u);
}

} // namespace
} // namespace tb::test
