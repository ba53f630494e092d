// Takeovers on the router's side (issue 32 point 2; docs/cluster.md, "A
// takeover swaps the group in the routes in one step"): while the owner's
// node is gone or stopping, the other routers keep the group's entry until
// the replica's node takes over; the new owner's group takes the old one's
// place in each topic's route in one version, so that no publish finds the
// topic without the group and is confirmed into nothing; without a
// takeover the entry goes after the deadline, or at once with no replica.

#include <chrono>
#include <string>
#include <vector>

#include "tests/actors/cluster_replicas_fixture.hpp"

namespace tb::test {
namespace {

TEST_F(ClusterReplicas, TheEntryStaysInTheRoutesUntilTheNewOwnerReplacesIt) {
  auto name = replicated_group_on_n2();
  auto old_group = group_at(n2, name);
  auto pub = spawn_session();
  publish(pub, "t.a", 1);
  ASSERT_EQ(route_at(router, "t.a")->groups.size(), 1u);
  // n1 sees n2's death first: the entry stays (a publish to it fails
  // UNAVAILABLE, none is confirmed without a group).
  peer_down(router, "n2");
  EXPECT_TRUE(entry_at(router, name).owner_lost);
  EXPECT_EQ(group_at(router, name), old_group);
  EXPECT_EQ(route_at(router, "t.a")->groups.size(), 1u);
  EXPECT_EQ(state_of(router).groups_lost, 0u);
  // A join meanwhile is refused UNAVAILABLE (its session retries).
  auto member = spawn_session();
  send_frame(member, join_frame(next_request_id(), 1, "t.>", name));
  run();
  auto failed = errors(member);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].error().error().code(), 14); // UNAVAILABLE
  EXPECT_NE(failed[0].error().error().message().find(
                "the node n2 that owns group \"" + name +
                "\" is gone; its replica on n3 is taking over (retry)"),
            std::string::npos)
      << failed[0].error().error().message();
  // Then n3 sees it and promotes: its gadd replaces n1's entry.
  peer_down(n3, "n2");
  EXPECT_FALSE(entry_at(router, name).owner_lost);
  EXPECT_EQ(group_at(router, name), group_at(n3, name));
  EXPECT_NE(group_at(router, name), old_group);
  ASSERT_EQ(route_at(router, "t.a")->groups.size(), 1u);
  EXPECT_EQ(route_at(router, "t.a")->groups[0], group_at(n3, name));
  // The takeover deadline passing later changes nothing.
  advance(std::chrono::seconds{4});
  EXPECT_EQ(group_at(router, name), group_at(n3, name));
  EXPECT_EQ(state_of(router).groups_lost, 0u);
}

TEST_F(ClusterReplicas, TheNewOwnerTakesTheOldOnesPlaceInOneRouteVersion) {
  // A publisher's cached route never lacks the group during a takeover: a
  // publish in that moment would be confirmed into nothing (CI once lost a
  // confirmed batch so, when the old group left the routes before the new
  // one came). Publishers on n1 (a peer) and on n3 (the promoted node).
  auto name = replicated_group_on_n2();
  auto at_n1 = spawn_session();
  auto ctx = context();
  ctx.router = n3;
  auto at_n3 = spawn_session(ctx);
  publish(at_n1, "t.a", 1);
  publish(at_n3, "t.a", 1, "n3");
  peer_down(router, "n2");
  self->send(n3, tb::peer_down_atom_v, std::string{"n2"});
  run_checking_routes({&at_n1, &at_n3}, "t.a");
  auto promoted = group_at(n3, name);
  for (auto* session : {&at_n1, &at_n3}) {
    auto& st = deref<tb::session_state>(session->hdl);
    EXPECT_EQ((*st.routes.find("t.a"))->groups[0], promoted);
  }
  publish(at_n1, "t.a", 1, "after");
  EXPECT_EQ(counters(name).pending, 3u);
}

TEST_F(ClusterReplicas, AStoppingOwnersGroupStaysInTheRoutesUntilTheTakeover) {
  // SIGTERM: the owner's router stops and its groups end `user_shutdown`
  // while the connection still carries their down messages. That is not a
  // deleted group: the entry stays until the replica takes over, and no
  // publisher's route is without the group meanwhile (CI once lost a
  // confirmed batch in a rolling restart so).
  auto name = replicated_group_on_n2();
  auto old_group = group_at(n2, name);
  auto at_n1 = spawn_session();
  publish(at_n1, "t.a", 2);
  self->send_exit(n2, caf::exit_reason::user_shutdown);
  run_checking_routes({&at_n1}, "t.a");
  EXPECT_EQ(owner_at(router, name), "n3");
  EXPECT_NE(group_at(router, name), old_group);
  EXPECT_EQ(group_at(router, name), group_at(n3, name));
  EXPECT_EQ(state_of(router).groups_lost, 0u);
  EXPECT_EQ(state_of(n3).promotions, 1u);
  publish(at_n1, "t.a", 1, "after");
  EXPECT_EQ(counters(name).pending, 3u);
}

TEST_F(ClusterReplicas, WithoutATakeoverTheEntryIsDroppedAfterTheDeadline) {
  auto name = replicated_group_on_n2();
  peer_down(router, "n2"); // n3 never promotes (it never sees n2 die)
  EXPECT_TRUE(entry_at(router, name).owner_lost);
  advance(std::chrono::milliseconds{2900});
  EXPECT_EQ(state_of(router).groups.count(name), 1u);
  advance(std::chrono::milliseconds{200}); // takeover_timeout 3 s passed
  EXPECT_EQ(state_of(router).groups.count(name), 0u);
  EXPECT_EQ(state_of(router).groups_lost, 1u);
}

TEST_F(ClusterReplicas, WithoutAMajorityTheEntryStaysPastTheDeadline) {
  // A node on the minority side of a partition cannot tell a slow takeover
  // from one on the other side: it keeps the entry, so a publish to the
  // group is refused (no_quorum), never routed nowhere and confirmed.
  auto name = replicated_group_on_n2();
  auto& quorum = *state_of(router).session_ctx.quorum;
  quorum.set(1, 3, tb::quorum_rule::majority);
  peer_down(router, "n2");
  advance(std::chrono::seconds{10});
  EXPECT_EQ(state_of(router).groups.count(name), 1u);
  EXPECT_TRUE(entry_at(router, name).owner_lost);
  EXPECT_EQ(state_of(router).groups_lost, 0u);
  // A majority again and still no takeover: dropped at the next deadline.
  quorum.set(3, 3, tb::quorum_rule::majority);
  advance(std::chrono::milliseconds{3100});
  EXPECT_EQ(state_of(router).groups.count(name), 0u);
  EXPECT_EQ(state_of(router).groups_lost, 1u);
}

TEST_F(ClusterReplicas, AReplicaWithoutAMajorityIsPromotedOnlyOnceItHasOne) {
  // The replica's node cut off alone must not make a second owner at a
  // higher term: its entry would win when the sides meet and drop what the
  // owner confirmed meanwhile. It promotes at the takeover deadline once it
  // sees a majority again (and the owner is still gone).
  auto name = replicated_group_on_n2();
  ASSERT_TRUE(keeps_replica(n3, name));
  auto& quorum = *state_of(n3).session_ctx.quorum;
  quorum.set(1, 3, tb::quorum_rule::majority);
  peer_down(n3, "n2");
  advance(std::chrono::seconds{10});
  EXPECT_EQ(state_of(n3).promotions, 0u);
  EXPECT_TRUE(keeps_replica(n3, name));
  EXPECT_TRUE(entry_at(n3, name).owner_lost);
  quorum.set(2, 3, tb::quorum_rule::majority);
  advance(std::chrono::milliseconds{3100});
  EXPECT_EQ(state_of(n3).promotions, 1u);
  EXPECT_EQ(owner_at(n3, name), "n3");
  EXPECT_EQ(entry_at(n3, name).term, 1u);
}

TEST_F(ClusterReplicas, AnEntryWhoseReplicaDiedWithTheOwnerIsDroppedAtOnce) {
  auto name = replicated_group_on_n2();
  peer_down(router, "n3");
  peer_down(router, "n2"); // owner and replica gone: nothing can take over
  EXPECT_EQ(state_of(router).groups.count(name), 0u);
  EXPECT_EQ(state_of(router).groups_lost, 1u);
}

} // namespace
} // namespace tb::test
