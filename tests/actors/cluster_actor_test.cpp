// The cluster actor's messaging on CAF's test coordinator, without sockets
// (issue 30, docs/cluster.md): a stand-in middleman "connects" to the
// cluster actors of other nodes in the same actor system, so greetings,
// refusals, readiness, node loss and rejoins run in simulated time.

#include <map>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <gtest/gtest.h>

#include "actors/cluster/cluster_actor.hpp"
#include "actors/router/router_actor.hpp"

namespace tb {
namespace {

using namespace std::chrono_literals;

// Tinybroker's types and the deterministic scheduler.
class cluster_test_config : public caf::actor_system_config {
public:
  cluster_test_config() {
    tb::add_message_types(*this);
    set("scheduler.policy", caf::atom("testing"));
  }
};

class ClusterActorTest : public ::testing::Test {
protected:
  cluster_test_config cfg;
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  // The cluster actor "listening" on each port.
  std::map<uint16_t, caf::actor> listening;
  // Ports whose connect never completes (a hung peer).
  std::set<uint16_t> hung;
  caf::actor dialer;
  std::vector<caf::actor> actors;
  // The majority rule of the nodes `start` starts.
  quorum_rule rule = quorum_rule::majority;

  void SetUp() override {
    dialer = sys.spawn([this](caf::event_based_actor* self) -> caf::behavior {
      return {
          [this, self](caf::connect_atom, const std::string&, uint16_t port)
              -> caf::result<caf::node_id, caf::strong_actor_ptr,
                             std::set<std::string>> {
            if (hung.count(port) != 0)
              return self->make_response_promise(); // never answered
            auto i = listening.find(port);
            if (i == listening.end())
              return caf::make_error(caf::sec::cannot_connect_to_node);
            return {caf::node_id{},
                    caf::actor_cast<caf::strong_actor_ptr>(i->second),
                    std::set<std::string>{}};
          },
      };
    });
    actors.push_back(dialer);
  }

  void TearDown() override {
    for (auto& a : actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
  }

  // Starts node `name` on `port` with `peers`; it dials at once.
  cluster_actor start(const std::string& name, uint16_t port,
                      std::vector<uint16_t> peers,
                      const std::string& node_id = {}) {
    auto router = sys.spawn(router_actor_impl, router_settings{});
    actors.push_back(caf::actor_cast<caf::actor>(router));
    cluster_settings s;
    s.config.node_name = name;
    s.config.listen = "h:" + std::to_string(port);
    for (auto p : peers)
      s.config.peers.push_back("h:" + std::to_string(p));
    s.node_id = node_id.empty() ? "id-" + name : node_id;
    s.epoch = ++epochs_;
    s.router = router;
    s.dialer = dialer;
    s.config.quorum = rule;
    auto a = sys.spawn(cluster_actor_impl, s);
    listening[port] = caf::actor_cast<caf::actor>(a);
    actors.push_back(caf::actor_cast<caf::actor>(a));
    return a;
  }

  // Returns the state of cluster actor `a`.
  cluster_state& state(const cluster_actor& a) {
    auto* ptr = caf::actor_cast<caf::abstract_actor*>(a);
    using impl = cluster_actor::stateful_base<cluster_state>;
    return dynamic_cast<impl&>(*ptr).state;
  }

  // Returns what `a` says of the peer at `address` or called `name`.
  cluster_peer_view peer(const cluster_actor& a, const std::string& key) {
    for (auto& p : state(a).book.view())
      if (p.name == key || p.address == key)
        return p;
    ADD_FAILURE() << "no peer " << key;
    return {};
  }

  // Kills cluster actor `a` as a node loss would.
  void kill(const cluster_actor& a, uint16_t port) {
    listening.erase(port);
    caf::anon_send_exit(a, caf::exit_reason::remote_link_unreachable);
    sched.run();
  }

private:
  uint64_t epochs_ = 0;
};

TEST_F(ClusterActorTest, TwoNodesGreetSyncAndReportReady) {
  auto n1 = start("n1", 1, {2});
  auto n2 = start("n2", 2, {1});
  sched.run();
  EXPECT_EQ(peer(n2, "n1").state, "synced");
  EXPECT_EQ(peer(n1, "n2").state, "synced");
  EXPECT_TRUE(state(n1).ready);
  EXPECT_TRUE(state(n2).ready);
}

TEST_F(ClusterActorTest, ReadyWaitsForAHungPeerUntilDeadAfter) {
  hung.insert(3);
  auto n1 = start("n1", 1, {3});
  sched.run();
  EXPECT_FALSE(state(n1).ready);
  sched.advance_time(999ms);
  sched.run();
  EXPECT_FALSE(state(n1).ready);
  sched.advance_time(1ms);
  sched.run();
  EXPECT_TRUE(state(n1).ready);
}

TEST_F(ClusterActorTest, AnUnreachablePeerDoesNotHoldReadinessAndIsRetried) {
  auto n1 = start("n1", 1, {9});
  sched.run();
  EXPECT_TRUE(state(n1).ready); // its first dial failed
  EXPECT_EQ(peer(n1, "h:9").failed_dials, 1u);
  sched.advance_time(100ms);
  sched.run();
  EXPECT_EQ(peer(n1, "h:9").failed_dials, 2u);
  sched.advance_time(199ms);
  sched.run();
  EXPECT_EQ(peer(n1, "h:9").failed_dials, 2u);
  sched.advance_time(1ms);
  sched.run();
  EXPECT_EQ(peer(n1, "h:9").failed_dials, 3u);
}

TEST_F(ClusterActorTest, ADuplicateNameIsRefusedOnBothSides) {
  auto n1 = start("n1", 1, {});
  sched.run();
  auto twin = start("n1", 2, {1}, "id-twin");
  sched.run();
  auto seen = peer(twin, "h:1");
  EXPECT_EQ(seen.state, "refused");
  EXPECT_NE(seen.last_error.find("duplicate node name \"n1\""),
            std::string::npos)
      << seen.last_error;
  EXPECT_TRUE(state(n1).book.view().empty()); // n1 took nothing
  EXPECT_TRUE(state(twin).ready); // refused counts as a first attempt
}

TEST_F(ClusterActorTest, ANodeLossIsSeenAndTheRestartedNodeRejoins) {
  auto n1 = start("n1", 1, {3});
  auto n3 = start("n3", 3, {1});
  sched.run();
  sched.advance_time(100ms); // n1's first dial came before n3 listened
  sched.run();
  ASSERT_EQ(peer(n1, "n3").state, "synced");
  kill(n3, 3);
  EXPECT_EQ(peer(n1, "n3").state, "down");
  // n1 < n3: n1 redials after 100 ms; nobody there yet.
  sched.advance_time(100ms);
  sched.run();
  EXPECT_EQ(peer(n1, "n3").state, "down");
  auto again = start("n3", 3, {1}, "id-n3-again");
  sched.run();
  auto p = peer(n1, "n3");
  EXPECT_EQ(p.state, "synced");
  EXPECT_EQ(p.reconnects, 1u);
  EXPECT_EQ(p.node_id, "id-n3-again");
  // The directory holds the new node's own handles and epoch.
  auto& handles = state(n1).peers.at("n3");
  EXPECT_EQ(handles.cluster, caf::actor_cast<caf::actor>(again));
  EXPECT_EQ(handles.epoch, state(again).hello.epoch);
  EXPECT_EQ(handles.router, state(again).hello.router);
}

// -- the majority rule (issue 32 point 3) -------------------------------------

// Returns what the sessions of node `a` read: "visible/configured quorum".
std::string reading(const quorum_state& q) {
  auto r = q.read();
  return std::to_string(r.visible) + "/" + std::to_string(r.configured) +
         (r.has_quorum ? " quorum" : " no quorum");
}

TEST(QuorumRule, AMajorityIsMoreThanHalfOfTheConfiguredNodes) {
  EXPECT_EQ(quorum_majority(1), 1u);
  EXPECT_EQ(quorum_majority(2), 2u);
  EXPECT_EQ(quorum_majority(3), 2u);
  EXPECT_EQ(quorum_majority(4), 3u);
  EXPECT_EQ(quorum_majority(5), 3u);
  EXPECT_TRUE(quorum_reached(1, 1, quorum_rule::majority));
  EXPECT_FALSE(quorum_reached(1, 2, quorum_rule::majority));
  EXPECT_TRUE(quorum_reached(1, 2, quorum_rule::none));
  EXPECT_FALSE(quorum_reached(2, 4, quorum_rule::majority));
  EXPECT_TRUE(quorum_reached(3, 4, quorum_rule::majority));
  quorum_state alone; // a node without [cluster]
  EXPECT_TRUE(alone.has_quorum());
  EXPECT_EQ(reading(alone), "1/1 quorum");
  alone.set(1, 3, quorum_rule::majority);
  EXPECT_EQ(alone.read().describe(),
            "this node sees 1 of 3 configured nodes (needs 2)");
}

TEST_F(ClusterActorTest, AStartingNodeHasNoQuorumUntilItSeesAMajority) {
  auto n1 = start("n1", 1, {2, 3});
  sched.run();
  auto quorum = state(n1).settings.quorum; // what the sessions read
  auto& q = *quorum;
  EXPECT_EQ(reading(q), "1/3 no quorum");
  sched.advance_time(1s); // the ready gate does not wait for a majority
  sched.run();
  EXPECT_TRUE(state(n1).ready);
  EXPECT_EQ(reading(q), "1/3 no quorum");
  start("n2", 2, {1, 3});
  sched.advance_time(2s); // n1 redials
  sched.run();
  EXPECT_EQ(reading(q), "2/3 quorum");
}

TEST_F(ClusterActorTest, ANodeLosesQuorumWithTheMajorityAndGetsItBack) {
  auto n1 = start("n1", 1, {2, 3});
  auto n2 = start("n2", 2, {1, 3});
  auto n3 = start("n3", 3, {1, 2});
  sched.run();
  sched.advance_time(100ms); // the dials that came before a node listened
  sched.run();
  auto quorum = state(n1).settings.quorum; // what the sessions read
  auto& q = *quorum;
  ASSERT_EQ(reading(q), "3/3 quorum");
  kill(n2, 2);
  EXPECT_EQ(reading(q), "2/3 quorum");
  kill(n3, 3);
  EXPECT_EQ(reading(q), "1/3 no quorum");
  // The Stats view says the same.
  auto& st = state(n1);
  EXPECT_EQ(st.quorum.visible, 1u);
  EXPECT_EQ(st.quorum.configured, 3u);
  EXPECT_FALSE(st.quorum.has_quorum);
  q.count_refusal();
  caf::scoped_actor asker{sys, true};
  asker->send(n1, caf::get_atom_v, cluster_atom_v);
  sched.run();
  asker->receive([](cluster_view& v) {
    EXPECT_EQ(v.configured_nodes, 3u);
    EXPECT_EQ(v.visible_nodes, 1u);
    EXPECT_FALSE(v.has_quorum);
    EXPECT_EQ(v.quorum_refusals, 1u);
  });
  start("n3", 3, {1, 2}, "id-n3-again");
  sched.run();
  sched.advance_time(2s);
  sched.run();
  EXPECT_EQ(reading(q), "2/3 quorum");
}

TEST_F(ClusterActorTest, QuorumNoneLetsAMinorityRunGroups) {
  rule = quorum_rule::none;
  auto n1 = start("n1", 1, {2});
  sched.run();
  EXPECT_TRUE(state(n1).settings.quorum->has_quorum());
  EXPECT_EQ(reading(*state(n1).settings.quorum), "1/2 quorum");
}

} // namespace
} // namespace tb
