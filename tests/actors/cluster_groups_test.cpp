// Groups across nodes (issue 30 points 3 and 4, docs/cluster.md "Groups
// across nodes"): two or three "nodes" in one actor system, each its own
// router, shards and sessions, connected by `peer_up` as the cluster actor
// does. Each group has one owner node (HRW over the live nodes); the other
// routers hold a directory entry and route to the owner's group actor.
// Where groups live, how they are created, listed and deleted, and two
// owners of one name; what happens when a node dies is in
// cluster_groups_loss_test.cpp.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "actors/router/router_directory.hpp"
#include "tests/actors/cluster_nodes_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

TEST_F(ClusterGroups, HrwPicksTheSameOwnerOnEveryNodeAndSpreadsGroups) {
  auto n2 = spawn_node("n2");
  auto n3 = spawn_node("n3");
  connect("n1", router, "n2", n2);
  connect("n1", router, "n3", n3);
  connect("n2", n2, "n3", n3);
  std::set<std::string> owners;
  for (int k = 0; k < 30; ++k) {
    auto name = "g" + std::to_string(k);
    auto owner = tb::hrw_owner(state_of(router), name);
    EXPECT_EQ(tb::hrw_owner(state_of(n2), name), owner) << name;
    EXPECT_EQ(tb::hrw_owner(state_of(n3), name), owner) << name;
    owners.insert(owner);
  }
  EXPECT_EQ(owners, (std::set<std::string>{"n1", "n2", "n3"}));
}

TEST_F(ClusterGroups, CreateOnANonOwnerCreatesTheGroupOnItsOwnerOnly) {
  auto n2 = spawn_node("n2");
  auto n3 = spawn_node("n3");
  connect("n1", router, "n2", n2);
  connect("n1", router, "n3", n3);
  connect("n2", n2, "n3", n3);
  auto name = name_owned_by("n3", {"n1", "n2", "n3"});
  auto info = create_group(name, group_settings("t.>"));
  EXPECT_EQ(info.owner_node, "n3");
  // One group actor, on n3; n1 and n2 route to it.
  auto handle = group_at(n3, name);
  ASSERT_TRUE(handle);
  EXPECT_TRUE(state_of(n3).groups.at(name).owner.empty());
  EXPECT_EQ(group_at(router, name), handle);
  EXPECT_EQ(group_at(n2, name), handle);
  EXPECT_EQ(owner_at(router, name), "n3");
  EXPECT_EQ(owner_at(n2, name), "n3");
  EXPECT_EQ(state_of(router).linked_children.count(handle.address()), 0u);
  EXPECT_EQ(state_of(n3).linked_children.count(handle.address()), 1u);
  // A remote group is not interest: nothing crossed as RS+.
  EXPECT_EQ(state_of(router).interest_changes_received, 0u);
  EXPECT_EQ(state_of(n2).interest_changes_received, 0u);
  EXPECT_TRUE(state_of(router).interest.empty());
  // Created again on any node: the same group, same answer.
  auto again =
      query<tb::group_info>(n2, tb::create_atom_v, name, group_settings("t.>"));
  EXPECT_EQ(again.owner_node, "n3");
  EXPECT_EQ(group_at(n3, name), handle);
}

TEST_F(ClusterGroups, AnExistingGroupStaysWhereItLivesWhenANodeJoins) {
  auto n2 = spawn_node("n2");
  connect("n1", router, "n2", n2);
  // Owned by n1 over {n1, n2}, but by n3 once n3 is up.
  std::string name;
  for (int k = 0; k < 1000 && name.empty(); ++k) {
    auto candidate = "s" + std::to_string(k);
    if (tb::hrw_beats("n1", "n2", candidate) &&
        tb::hrw_beats("n3", "n1", candidate))
      name = candidate;
  }
  ASSERT_FALSE(name.empty());
  auto sub = spawn_session();
  join(sub, 1, name, "t.>");
  ASSERT_EQ(sub.sink->of_kind(kind::kSubscribed).size(), 1u);
  auto handle = group_at(router, name);
  auto n3 = spawn_node("n3");
  connect("n1", router, "n3", n3);
  connect("n2", n2, "n3", n3);
  // n3 learned the group in its first sync and does not take it over.
  EXPECT_EQ(owner_at(n3, name), "n1");
  EXPECT_EQ(group_at(n3, name), handle);
  auto member = session_on(n3);
  join(member, 1, name, "t.>");
  EXPECT_EQ(member.sink->of_kind(kind::kSubscribed).size(), 1u);
  EXPECT_EQ(group_at(n3, name), handle);
  EXPECT_EQ(counters(name).members, 2u);
}

TEST_F(ClusterGroups,
       AJoinOnANonOwnerReachesTheOwnersGroupAndAPublishAnywhere) {
  auto n2 = spawn_node("n2");
  auto n3 = spawn_node("n3");
  connect("n1", router, "n2", n2);
  connect("n1", router, "n3", n3);
  connect("n2", n2, "n3", n3);
  auto name = name_owned_by("n2", {"n1", "n2", "n3"});
  // The member on n1 creates the group on n2 (auto-create) and joins it.
  auto member = spawn_session();
  join(member, 1, name, "orders.>");
  ASSERT_EQ(member.sink->of_kind(kind::kSubscribed).size(), 1u);
  ASSERT_TRUE(group_at(n2, name));
  EXPECT_EQ(owner_at(router, name), "n2");
  EXPECT_EQ(owner_at(n3, name), "n2");
  // A publish on n3 (neither owner nor member) is enqueued to n2's group
  // straight from the publishing session, and the member on n1 gets it.
  auto pub = session_on(n3);
  publish(pub, "orders.eu", 3);
  ASSERT_NE(route_at(n3, "orders.eu"), nullptr);
  EXPECT_EQ(route_at(n3, "orders.eu")->groups.size(), 1u);
  EXPECT_EQ(member.sink->payloads(), (strings{"m0", "m1", "m2"}));
  std::vector<uint64_t> ids;
  for (auto& delivery : member.sink->deliveries())
    ids.push_back(delivery.delivery_id());
  ack(member, ids);
  auto got = query<tb::group_info>(group_at(n2, name), tb::stats_atom_v);
  EXPECT_EQ(got.counters.acked, 3u);
  EXPECT_EQ(got.counters.members, 1u);
}

TEST_F(ClusterGroups, CreateAnswersOnlyOnceEveryLivePeerAppliedTheGroup) {
  auto n2 = spawn_node("n2");
  connect("n1", router, "n2", n2);
  auto name = name_owned_by("n1", {"n1", "n2"});
  auto pub = session_on(n2);
  publish(pub, "t.x", 1, "before"); // n2 caches the route already
  auto answer = self->request(router, caf::infinite, tb::create_atom_v, name,
                              group_settings("t.x"));
  run_except(n2); // n2 has not applied the group yet
  EXPECT_TRUE(self->mailbox().empty()) << "answered before n2 applied it";
  run();
  ASSERT_FALSE(self->mailbox().empty());
  answer.receive([](tb::group_info& info) { EXPECT_EQ(info.owner_node, "n1"); },
                 [](caf::error& err) { ADD_FAILURE() << to_string(err); });
  // "Create on n1, then publish on n2 at once" never misses.
  publish(pub, "t.x", 2);
  EXPECT_EQ(counters(name).pending, 2u);
}

TEST_F(ClusterGroups, ADeletedGroupIsGoneOnEveryNode) {
  auto n2 = spawn_node("n2");
  connect("n1", router, "n2", n2);
  auto name = name_owned_by("n2", {"n1", "n2"});
  create_group(name, group_settings("t.>"));
  auto group = group_at(n2, name);
  ASSERT_TRUE(group);
  auto dropped = query<uint64_t>(router, tb::delete_atom_v, name);
  EXPECT_EQ(dropped, 0u);
  run();
  EXPECT_TRUE(terminated(group));
  EXPECT_EQ(state_of(router).groups.count(name), 0u);
  EXPECT_EQ(state_of(n2).groups.count(name), 0u);
}

TEST_F(ClusterGroups, ListGroupsShowsEveryGroupOfTheClusterOnceWithItsOwner) {
  auto n2 = spawn_node("n2");
  auto n3 = spawn_node("n3");
  connect("n1", router, "n2", n2);
  connect("n1", router, "n3", n3);
  connect("n2", n2, "n3", n3);
  auto a = name_owned_by("n1", {"n1", "n2", "n3"}, "a");
  auto b = name_owned_by("n2", {"n1", "n2", "n3"}, "b");
  create_group(a, group_settings("t.a"));
  query<tb::group_info>(n3, tb::create_atom_v, b, group_settings("t.b"));
  auto listed = query<std::vector<tb::group_info>>(n3, tb::list_atom_v);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].name, a);
  EXPECT_EQ(listed[0].owner_node, "n1");
  EXPECT_EQ(listed[1].name, b);
  EXPECT_EQ(listed[1].owner_node, "n2");
  // Stats lists the same groups, each with its owner.
  auto view = query<tb::router_view>(n3, tb::stats_atom_v, tb::stats_query{});
  ASSERT_EQ(view.groups.size(), 2u);
  ASSERT_EQ(view.group_owners.size(), 2u);
  std::set<std::string> owners(view.group_owners.begin(),
                               view.group_owners.end());
  EXPECT_EQ(owners, (std::set<std::string>{"n1", "n2"}));
}

TEST_F(ClusterGroups, TwoOwnersOfOneNameResolveToTheHigherHrwRank) {
  auto n2 = spawn_node("n2");
  // Two nodes that meet late each created "jobs" alone.
  auto a = spawn_session();
  join(a, 1, "jobs", "t.>");
  auto b = session_on(n2);
  join(b, 1, "jobs", "t.>");
  auto mine = group_at(router, "jobs");
  auto theirs = group_at(n2, "jobs");
  ASSERT_TRUE(mine && theirs && mine != theirs);
  auto winner =
      tb::hrw_beats("n1", "n2", "jobs") ? std::string{"n1"} : std::string{"n2"};
  auto loser = winner == "n1" ? theirs : mine;
  auto kept = winner == "n1" ? mine : theirs;
  connect("n1", router, "n2", n2);
  EXPECT_EQ(owner_at(router, "jobs"), winner);
  EXPECT_EQ(owner_at(n2, "jobs"), winner);
  EXPECT_EQ(group_at(router, "jobs"), kept);
  EXPECT_EQ(group_at(n2, "jobs"), kept);
  EXPECT_TRUE(terminated(loser));
  EXPECT_FALSE(terminated(kept));
  EXPECT_GE(state_of(router).group_conflicts, 1u);
  EXPECT_GE(state_of(n2).group_conflicts, 1u);
  // The loser's member re-joined the winner by itself (it was told "the
  // group was deleted" before, and its client had to join again).
  run();
  auto& moved = winner == "n1" ? b : a;
  auto ended = moved.sink->of_kind(kind::kUnsubscribed);
  EXPECT_TRUE(ended.empty()) << ended.front().unsubscribed().reason();
  auto& membership = deref<tb::session_state>(moved.hdl).memberships.at(1);
  EXPECT_EQ(membership.handle, kept);
  EXPECT_FALSE(membership.rejoining);
  EXPECT_EQ(deref<tb::group_state>(kept).members.active_count(), 2u);
}

TEST_F(ClusterGroups, WhatAMemberSendsAGroupOnAnotherNodeCanCrossNodes) {
  // join, ack, nack, reject, progress and leave carry the member's session
  // handle, and acks a list of ids, as top-level elements: over CAF's
  // network layer each needs a type ID, or the group gets an empty message.
  auto member = spawn_session();
  std::vector<caf::message> sent{
      caf::make_message(tb::join_atom_v, member.hdl, tb::member_spec{}),
      caf::make_message(tb::ack_atom_v, member.hdl,
                        std::vector<uint64_t>{1, 2})};
  for (auto& msg : sent) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    ASSERT_FALSE(sink(msg)) << to_string(msg);
    caf::message copy;
    caf::binary_deserializer source{sys, buf};
    ASSERT_FALSE(source(copy));
    EXPECT_EQ(copy.size(), 3u);
    EXPECT_EQ(to_string(copy), to_string(msg));
  }
}

} // namespace
} // namespace tb::test
