// The fixture of the replica tests on the router's side (issue 32): routers
// as nodes in one actor system (cluster_nodes_fixture), groups with one
// replica, and a check that a takeover swaps a group in the routes in one
// version.

#pragma once

#include <string>
#include <vector>

#include "actors/router/router_replicas.hpp"
#include "tests/actors/cluster_nodes_fixture.hpp"

namespace tb::test {

/// Three nodes at most; groups made with `replicated`.
class ClusterReplicas : public cluster_nodes_test {
protected:
  /// Returns the test's group settings for `pattern` with one replica.
  static tb::group_settings replicated(std::string pattern) {
    auto result = group_settings(std::move(pattern));
    result.replicas = 1;
    return result;
  }

  /// Returns a group name whose HRW order over the nodes is `order`.
  static std::string name_ranked(const strings& order) {
    for (int k = 0; k < 5000; ++k) {
      auto name = "r" + std::to_string(k);
      bool ok = true;
      for (size_t i = 0; i + 1 < order.size() && ok; ++i)
        ok = tb::hrw_beats(order[i], order[i + 1], name);
      if (ok)
        return name;
    }
    ADD_FAILURE() << "no name ranked like that";
    return {};
  }

  /// Returns the directory entry `node` holds for `name` (fails if none).
  tb::router_group& entry_at(const tb::router_actor& node,
                             const std::string& name) {
    auto& groups = state_of(node).groups;
    auto i = groups.find(name);
    EXPECT_NE(i, groups.end()) << "no entry for " << name;
    static tb::router_group none;
    return i != groups.end() ? i->second : none;
  }

  /// Returns the counters of the replica `node` keeps of `name`.
  tb::replica_stats replica_at(const tb::router_actor& node,
                               const std::string& name) {
    auto& replicas = state_of(node).replicas;
    auto i = replicas.find(name);
    EXPECT_NE(i, replicas.end()) << "no replica of " << name;
    if (i == replicas.end())
      return {};
    return query<tb::replica_stats>(i->second.handle, tb::stats_atom_v);
  }

  /// Returns true if `node` keeps a replica of `name`.
  bool keeps_replica(const tb::router_actor& node, const std::string& name) {
    return state_of(node).replicas.count(name) != 0;
  }

  /// Spawns n2 and n3 and connects the three nodes.
  void three_nodes() {
    n2 = spawn_node("n2");
    n3 = spawn_node("n3");
    connect("n1", router, "n2", n2);
    connect("n1", router, "n3", n3);
    connect("n2", n2, "n3", n3);
  }

  /// Connects the three nodes and creates a group with a replica, owned by
  /// n2 with its replica on n3 (its HRW order is n2, n3, n1); returns its
  /// name.
  std::string replicated_group_on_n2() {
    three_nodes();
    auto name = name_ranked({"n2", "n3", "n1"});
    create_group(name, replicated("t.>"));
    run();
    return name;
  }

  /// Returns the router of node `name`.
  tb::router_actor node(const std::string& name) {
    return name == "n1" ? router : name == "n2" ? n2 : n3;
  }

  /// Runs every message one at a time, failing at any step where one of
  /// `publishers` caches `topic` with other than one group (a takeover must
  /// swap the group in one route version).
  void run_checking_routes(const std::vector<test_session*>& publishers,
                           const std::string& topic) {
    size_t steps = 0;
    while (sched.try_run_once()) {
      ++steps;
      for (auto* session : publishers) {
        auto& st = deref<tb::session_state>(session->hdl);
        auto* cached = st.routes.find(topic);
        ASSERT_NE(cached, nullptr) << "step " << steps;
        ASSERT_EQ((*cached)->groups.size(), 1u)
            << "step " << steps << ": a route without the group";
      }
    }
  }

  /// The nodes beyond the fixture's n1.
  tb::router_actor n2;
  tb::router_actor n3;
};

} // namespace tb::test
