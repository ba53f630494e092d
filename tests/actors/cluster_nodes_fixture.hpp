// The shared setup of the tests of several nodes in one actor system
// (groups across nodes, replicas): the fixture's router is node "n1", each
// test spawns more routers as nodes and connects them with `peer_up` as the
// cluster actor does; `peer_down` plays a node's death.

#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "actors/router/router_directory.hpp"
#include "tests/actors/group_fixture.hpp"

namespace tb::test {

/// Node names.
using strings = std::vector<std::string>;

/// The fixture's router is node "n1"; tests spawn "n2" and "n3".
class cluster_nodes_test : public group_test {
protected:
  cluster_nodes_test()
      : group_test([](tb::router_settings& s) { s.node_name = "n1"; }) {
    // nop
  }

  ~cluster_nodes_test() override {
    run();
    for (auto& node : extra_) {
      if (terminated(node))
        continue;
      for (auto& shard : deref<tb::router_state>(node).shards)
        self->send_exit(shard, caf::exit_reason::user_shutdown);
      self->send_exit(node, caf::exit_reason::user_shutdown);
    }
    run();
  }

  /// Spawns the router of node `name`, with `config_groups` if any, its
  /// settings changed by `configure` if given.
  tb::router_actor spawn_node(
      const std::string& name,
      std::vector<std::pair<std::string, tb::group_settings>> config = {},
      const std::function<void(tb::router_settings&)>& configure = {}) {
    tb::router_settings settings;
    settings.topic_idle_timeout = topic_idle;
    settings.session_context = context();
    settings.node_name = name;
    settings.config_groups = std::move(config);
    if (configure)
      configure(settings);
    auto node = sys.spawn(tb::router_actor_impl, settings);
    extra_.push_back(node);
    return node;
  }

  /// Spawns a session on the node of `node`.
  test_session session_on(const tb::router_actor& node) {
    auto ctx = context();
    ctx.router = node;
    return spawn_session(ctx);
  }

  /// Connects two nodes as the cluster actor would and runs until both
  /// answered that the first sync is done.
  void connect(const std::string& a_name, const tb::router_actor& a,
               const std::string& b_name, const tb::router_actor& b) {
    auto at_a = self->request(a, caf::infinite, tb::peer_up_atom_v, b_name,
                              caf::actor_cast<caf::actor>(b));
    auto at_b = self->request(b, caf::infinite, tb::peer_up_atom_v, a_name,
                              caf::actor_cast<caf::actor>(a));
    run();
    ASSERT_FALSE(self->mailbox().empty()) << "peer_up not answered";
    at_a.receive([](caf::ok_atom) {},
                 [](caf::error& err) { ADD_FAILURE() << to_string(err); });
    at_b.receive([](caf::ok_atom) {},
                 [](caf::error& err) { ADD_FAILURE() << to_string(err); });
  }

  /// Tells `node` that its peer `name` is gone, and runs.
  void peer_down(const tb::router_actor& node, const std::string& name) {
    self->send(node, tb::peer_down_atom_v, name);
    run();
  }

  /// Returns the router state of `node`.
  tb::router_state& state_of(const tb::router_actor& node) {
    return deref<tb::router_state>(node);
  }

  /// Returns the owner `node`'s directory names for group `name` ("" if
  /// it holds none).
  std::string owner_at(const tb::router_actor& node, const std::string& name) {
    auto& st = state_of(node);
    auto i = st.groups.find(name);
    return i != st.groups.end() ? tb::owner_of(st, i->second) : std::string{};
  }

  /// Returns the group actor `node` routes `name` to (null if none).
  tb::group_actor group_at(const tb::router_actor& node,
                           const std::string& name) {
    auto& st = state_of(node);
    auto i = st.groups.find(name);
    return i != st.groups.end() ? i->second.handle : tb::group_actor{};
  }

  /// Returns the route `node` holds for the topic `name` (null if none).
  const tb::route* route_at(const tb::router_actor& node,
                            const std::string& name) {
    auto& topics =
        deref<tb::topic_shard_state>(tb::shard_of(state_of(node), name)).topics;
    auto i = topics.find(name);
    return i != topics.end() ? i->second.current.ptr.get() : nullptr;
  }

  /// Returns a group name whose HRW owner over `nodes` is `owner`.
  static std::string name_owned_by(const std::string& owner,
                                   const strings& nodes,
                                   const std::string& prefix = "g") {
    for (int k = 0; k < 1000; ++k) {
      auto name = prefix + std::to_string(k);
      auto best = nodes.front();
      for (auto& node : nodes)
        if (tb::hrw_beats(node, best, name))
          best = node;
      if (best == owner)
        return name;
    }
    ADD_FAILURE() << "no name owned by " << owner;
    return {};
  }

  /// Returns the error frames `session` wrote.
  static std::vector<pb::ServerFrame> errors(const test_session& session) {
    return session.sink->of_kind(pb::ServerFrame::KindCase::kError);
  }

private:
  std::vector<tb::router_actor> extra_;
};

/// The fixture of the tests of groups across nodes
/// (tests/actors/cluster_groups_test.cpp, cluster_groups_loss_test.cpp),
/// shared so that both files' tests are one suite.
class ClusterGroups : public cluster_nodes_test {};

} // namespace tb::test
