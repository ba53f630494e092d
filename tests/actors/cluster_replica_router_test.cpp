// Replicas, the router's side (issue 32 points 1-3; docs/cluster.md,
// "Replicas"): routers as nodes in one actor system (cluster_nodes_fixture).
// The owner's router places a group's replica on the next node in HRW
// order; when the owner's node dies, the router keeping the replica
// promotes it at the next ownership term and every other router keeps the
// group's entry until that new owner's `gadd` replaces it; entries of an
// older term are refused.

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "tests/actors/cluster_replicas_fixture.hpp"

namespace tb::test {
namespace {

TEST_F(ClusterReplicas, PlacementPicksTheHrwSecondAndTellsEveryPeer) {
  three_nodes();
  auto name = name_ranked({"n2", "n3", "n1"});
  auto info = create_group(name, replicated("t.>"));
  EXPECT_EQ(info.owner_node, "n2");
  run();
  EXPECT_EQ(entry_at(n2, name).replica, "n3");
  EXPECT_TRUE(keeps_replica(n3, name));
  EXPECT_FALSE(keeps_replica(router, name));
  EXPECT_FALSE(keeps_replica(n2, name));
  // Every peer learned where the replica is (gadd with the new entry).
  EXPECT_EQ(entry_at(router, name).replica, "n3");
  EXPECT_EQ(entry_at(n3, name).replica, "n3");
  // ListGroups and Stats name it, with the term.
  auto listed = query<std::vector<tb::group_info>>(router, tb::list_atom_v);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].replica_node, "n3");
  EXPECT_EQ(listed[0].term, 0u);
  auto view =
      query<tb::router_view>(router, tb::stats_atom_v, tb::stats_query{});
  ASSERT_EQ(view.group_replicas.size(), 1u);
  EXPECT_EQ(view.group_replicas[0], "n3");
  auto at_n3 =
      query<tb::directory_stats>(n3, tb::stats_atom_v, tb::cluster_atom_v);
  EXPECT_EQ(at_n3.replicas_held, 1u);
}

TEST_F(ClusterReplicas, NoReplicaOnOneNodeAndOnePlacedWhenAPeerComesUp) {
  auto name = name_ranked({"n1", "n2"});
  create_group(name, replicated("t.>"));
  run();
  EXPECT_EQ(entry_at(router, name).replica, "");
  EXPECT_FALSE(entry_at(router, name).placing);
  n2 = spawn_node("n2");
  connect("n1", router, "n2", n2);
  run();
  EXPECT_EQ(entry_at(router, name).replica, "n2");
  EXPECT_TRUE(keeps_replica(n2, name));
  EXPECT_EQ(entry_at(n2, name).replica, "n2");
}

TEST_F(ClusterReplicas, AReplicaNodesDeathPlacesANewReplica) {
  three_nodes();
  auto name = name_ranked({"n1", "n2", "n3"});
  create_group(name, replicated("t.>"));
  run();
  ASSERT_EQ(entry_at(router, name).replica, "n2");
  ASSERT_TRUE(keeps_replica(n2, name));
  auto pub = spawn_session();
  publish(pub, "t.a", 4);
  EXPECT_EQ(replica_at(n2, name).held, 4u);
  peer_down(router, "n2");
  peer_down(n3, "n2");
  EXPECT_EQ(entry_at(router, name).replica, "n3");
  EXPECT_TRUE(keeps_replica(n3, name));
  // The group sent the new replica a full snapshot.
  auto fresh = replica_at(n3, name);
  EXPECT_TRUE(fresh.synced);
  EXPECT_EQ(fresh.held, 4u);
  EXPECT_EQ(entry_at(n3, name).replica, "n3");
  // The group itself stays where it was, at its term.
  EXPECT_EQ(owner_at(n3, name), "n1");
  EXPECT_EQ(entry_at(router, name).term, 0u);
}

TEST_F(ClusterReplicas, AReplicaNodeDyingWhileAskedIsSkippedForTheNext) {
  three_nodes();
  auto name = name_ranked({"n1", "n2", "n3"});
  // n2 never answers the grepl: its node dies meanwhile.
  auto answer = self->request(router, caf::infinite, tb::create_atom_v, name,
                              replicated("t.>"));
  run_except(n2);
  EXPECT_TRUE(entry_at(router, name).placing);
  self->send(router, tb::peer_down_atom_v, std::string{"n2"});
  run_except(n2);
  EXPECT_EQ(entry_at(router, name).replica, "n3");
  EXPECT_TRUE(keeps_replica(n3, name));
  answer.receive([](tb::group_info&) {},
                 [](caf::error& err) { ADD_FAILURE() << to_string(err); });
}

TEST_F(ClusterReplicas, ADeletedGroupsReplicaQuits) {
  auto name = replicated_group_on_n2();
  ASSERT_TRUE(keeps_replica(n3, name));
  auto replica = state_of(n3).replicas.at(name).handle;
  query<uint64_t>(router, tb::delete_atom_v, name);
  run();
  EXPECT_FALSE(keeps_replica(n3, name));
  EXPECT_TRUE(terminated(replica));
  EXPECT_EQ(state_of(n3).groups.count(name), 0u);
}

TEST_F(ClusterReplicas, TheOwnersDeathPromotesTheReplicaAtTheNextTerm) {
  auto name = replicated_group_on_n2();
  ASSERT_TRUE(keeps_replica(n3, name));
  auto old_group = group_at(n2, name);
  auto pub = spawn_session();
  publish(pub, "t.a", 3);
  auto started = std::chrono::steady_clock::now();
  peer_down(router, "n2");
  peer_down(n3, "n2");
  auto took = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  // Owner down to the new owner's gadd applied on every live router: the
  // messages run here in one go (simulated network, no timer involved).
  std::cout << "[ takeover ] owner down -> new owner on every live router: "
            << took.count() << " us of message handling\n";
  // n3 owns the group now, at term 1, and told n1.
  EXPECT_EQ(owner_at(n3, name), "n3");
  EXPECT_TRUE(entry_at(n3, name).owner.empty());
  EXPECT_EQ(entry_at(n3, name).term, 1u);
  EXPECT_EQ(owner_at(router, name), "n3");
  EXPECT_EQ(entry_at(router, name).term, 1u);
  EXPECT_FALSE(entry_at(router, name).owner_lost);
  auto promoted = group_at(n3, name);
  ASSERT_TRUE(promoted);
  EXPECT_NE(promoted, old_group);
  EXPECT_EQ(group_at(router, name), promoted);
  EXPECT_EQ(state_of(n3).promotions, 1u);
  EXPECT_EQ(state_of(router).groups_lost, 0u);
  // The replica quit with its state handed over; a new one lives on n1,
  // the next node in HRW order over {n1, n3}.
  EXPECT_FALSE(keeps_replica(n3, name));
  EXPECT_TRUE(keeps_replica(router, name));
  EXPECT_EQ(entry_at(n3, name).replica, "n1");
  EXPECT_EQ(entry_at(router, name).replica, "n1");
  // The promoted group holds what the old owner confirmed, and publishes
  // on n1 now reach it (and its new replica).
  EXPECT_EQ(counters(name).pending, 3u);
  publish(pub, "t.a", 2, "after");
  EXPECT_EQ(route_at(router, "t.a")->groups.size(), 1u);
  EXPECT_EQ(counters(name).pending, 5u);
  EXPECT_EQ(replica_at(router, name).held, 5u);
  auto directory =
      query<tb::directory_stats>(n3, tb::stats_atom_v, tb::cluster_atom_v);
  EXPECT_EQ(directory.promotions, 1u);
  EXPECT_EQ(directory.owned, 1u);
}

TEST_F(ClusterReplicas, ReplicasZeroKeepsTodaysBehaviour) {
  three_nodes();
  auto name = name_ranked({"n2", "n3", "n1"});
  create_group(name, group_settings("t.>"));
  run();
  EXPECT_EQ(entry_at(n2, name).replica, "");
  for (auto& node : {router, n2, n3})
    EXPECT_TRUE(state_of(node).replicas.empty());
  peer_down(router, "n2");
  peer_down(n3, "n2");
  EXPECT_EQ(state_of(router).groups.count(name), 0u);
  EXPECT_EQ(state_of(router).groups_lost, 1u);
  EXPECT_EQ(state_of(n3).groups.count(name), 0u);
  EXPECT_EQ(state_of(n3).promotions, 0u);
}

TEST_F(ClusterReplicas, AStoppedOldOwnerIsRefusedAndDropsItsStaleGroup) {
  auto name = replicated_group_on_n2();
  auto stale = group_at(n2, name);
  // n2 is stopped (SIGSTOP): n1 and n3 declare it dead, n3 takes over.
  peer_down(router, "n2");
  peer_down(n3, "n2");
  ASSERT_EQ(entry_at(n3, name).term, 1u);
  auto promoted = group_at(n3, name);
  // n2 resumes still owning the group at term 0: its links dropped, then
  // every node meets it again and the routers sync.
  peer_down(n2, "n1");
  peer_down(n2, "n3");
  EXPECT_TRUE(state_of(n2).groups.at(name).owner.empty()) << "still owns it";
  connect("n1", router, "n2", n2);
  connect("n2", n2, "n3", n3);
  run();
  // Its gsync (term 0) was refused on n1 and n3, counted.
  EXPECT_EQ(group_at(router, name), promoted);
  EXPECT_EQ(group_at(n3, name), promoted);
  EXPECT_GE(state_of(router).stale_entries_refused, 1u);
  EXPECT_GE(state_of(n3).stale_entries_refused, 1u);
  // n3's gsync (term 1) replaced n2's stale group: deleted, routed to n3.
  EXPECT_TRUE(terminated(stale));
  EXPECT_EQ(group_at(n2, name), promoted);
  EXPECT_EQ(owner_at(n2, name), "n3");
  EXPECT_EQ(entry_at(n2, name).term, 1u);
  // The replica of the term-1 owner is still in place.
  EXPECT_EQ(entry_at(n3, name).replica, "n1");
  EXPECT_TRUE(keeps_replica(router, name));
}

TEST_F(ClusterReplicas, ALowerTermGaddIsRefusedAndAHigherOneReplaces) {
  n2 = spawn_node("n2");
  connect("n1", router, "n2", n2);
  auto name = name_ranked({"n2", "n1"});
  create_group(name, replicated("t.>"));
  run();
  auto current = entry_at(router, name);
  auto other = group_at(n2, name);
  // An entry of an older term (an old owner's late gadd): ok, ignored.
  auto stale_entry =
      tb::group_entry{name, current.settings, "n9", 1, other, 0, ""};
  state_of(router).groups.at(name).term = 2; // the directory is at term 2
  auto refused = query<caf::ok_atom>(router, tb::gadd_atom_v, stale_entry);
  (void)refused;
  EXPECT_EQ(state_of(router).stale_entries_refused, 1u);
  EXPECT_EQ(entry_at(router, name).owner, "n2");
  auto directory =
      query<tb::directory_stats>(router, tb::stats_atom_v, tb::cluster_atom_v);
  EXPECT_EQ(directory.stale_entries_refused, 1u);
}

TEST_F(ClusterReplicas, ABadReplicasValueIsRefusedNamingTheGroup) {
  auto settings = group_settings("t.>");
  settings.replicas = 2;
  auto answer =
      self->request(router, caf::infinite, tb::create_atom_v, "jobs", settings);
  run();
  ASSERT_FALSE(self->mailbox().empty());
  answer.receive(
      [](tb::group_info&) { ADD_FAILURE() << "created with replicas = 2"; },
      [](caf::error& err) {
        auto info = tb::to_error_info(err);
        EXPECT_EQ(info.code, tb::ec::invalid_request) << info.text;
        EXPECT_NE(info.text.find("group \"jobs\": replicas = 2: a group has "
                                 "0 or 1 replicas"),
                  std::string::npos)
            << info.text;
      });
}

} // namespace
} // namespace tb::test
