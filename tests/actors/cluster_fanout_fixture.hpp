// The fixture of the fan-out tests across nodes (tests/actors/
// cluster_fanout_test.cpp, cluster_fanout_link_test.cpp): the fixture's
// router is node "n1", each test spawns more routers as nodes and connects
// them by sending `peer_up` to each router with the other's router, as the
// cluster actor does over CAF's network layer.

#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "actors/link/link_in.hpp"
#include "actors/link/link_out.hpp"
#include "tests/actors/actor_fixture.hpp"

namespace tb::test {

/// The fixture's router is node "n1"; tests spawn "n2" and "n3".
class ClusterFanout : public actor_test {
protected:
  /// Spawns node "n1"'s router, which syncs its interest in chunks of 100.
  ClusterFanout()
      : actor_test([](tb::router_settings& s) { s.interest_chunk = 100; }) {
    // nop
  }

  /// Stops the other nodes' routers and their shards.
  ~ClusterFanout() override {
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

  /// Spawns another node's router whose links have `bounds`.
  tb::router_actor spawn_node(tb::link_settings bounds = {}) {
    tb::router_settings settings;
    settings.topic_idle_timeout = topic_idle;
    settings.session_context = context();
    settings.links = bounds;
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

  /// Sends `peer_up` for `peer` (named `peer_name`) to `node`; the answer
  /// arrives in `self`'s mailbox.
  auto peer_up(const tb::router_actor& node, const std::string& peer_name,
               const tb::router_actor& peer) {
    return self->request(node, caf::infinite, tb::peer_up_atom_v, peer_name,
                         caf::actor_cast<caf::actor>(peer));
  }

  /// Connects two nodes as the cluster actor would and runs until both
  /// answered that the first sync is done.
  void connect(const std::string& a_name, const tb::router_actor& a,
               const std::string& b_name, const tb::router_actor& b) {
    auto at_a = peer_up(a, b_name, b);
    auto at_b = peer_up(b, a_name, a);
    run();
    ASSERT_FALSE(self->mailbox().empty()) << "peer_up not answered";
    at_a.receive([](caf::ok_atom) {},
                 [](caf::error& err) { ADD_FAILURE() << to_string(err); });
    at_b.receive([](caf::ok_atom) {},
                 [](caf::error& err) { ADD_FAILURE() << to_string(err); });
  }

  /// Returns the router state of `node`.
  tb::router_state& state_of(const tb::router_actor& node) {
    return deref<tb::router_state>(node);
  }

  /// Returns the entry `node` keeps for its peer `name` (fails if none).
  tb::router_peer& peer_at(const tb::router_actor& node,
                           const std::string& name) {
    auto& st = state_of(node);
    for (auto& [addr, peer] : st.peers)
      if (peer.name == name)
        return peer;
    ADD_FAILURE() << "no peer " << name;
    static tb::router_peer none;
    return none;
  }

  /// Returns the patterns the peer `name` is interested in, as `node`
  /// knows them.
  std::set<std::string> interest_at(const tb::router_actor& node,
                                    const std::string& name) {
    std::set<std::string> result;
    for (auto& [pattern, key] : peer_at(node, name).interest)
      result.insert(pattern);
    return result;
  }

  /// Returns the counters of the link from `node` to its peer `name`,
  /// without running anything.
  tb::link_stats out_stats(const tb::router_actor& node,
                           const std::string& name) {
    auto& out = peer_at(node, name).outbound;
    if (!out)
      return {};
    return deref<tb::link_out_state>(out).stats;
  }

  /// Returns the route `node` holds for the topic `name` (null if none).
  const tb::route* route_at(const tb::router_actor& node,
                            const std::string& name) {
    auto& topics =
        deref<tb::topic_shard_state>(tb::shard_of(state_of(node), name)).topics;
    auto i = topics.find(name);
    return i != topics.end() ? i->second.current.ptr.get() : nullptr;
  }

  /// Unsubscribes `session`'s subscription `id` and runs.
  void unsubscribe(const test_session& session, uint64_t id) {
    send_frame(session, unsubscribe_frame(next_request_id(), id));
    run();
  }

private:
  std::vector<tb::router_actor> extra_;
};

} // namespace tb::test
