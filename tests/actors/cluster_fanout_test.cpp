// Fan-out across nodes (issue 30 point 2, docs/cluster.md): two or three
// "nodes" in one actor system, each its own router, shards and sessions,
// connected by sending `peer_up` to each router with the other's router,
// as the cluster actor does over CAF's network layer.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "actors/link/link_in.hpp"
#include "actors/link/link_out.hpp"
#include "tests/actors/actor_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;
using strings = std::vector<std::string>;

/// The fixture's router is node "n1"; tests spawn "n2" and "n3".
class ClusterFanout : public actor_test {
protected:
  ClusterFanout()
      : actor_test([](tb::router_settings& s) { s.interest_chunk = 100; }) {
    // nop
  }

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

TEST_F(ClusterFanout,
       InterestCrossesOnlyWhenAPatternsCountGoesZeroToOneAndBack) {
  auto n2 = spawn_node();
  connect("n1", router, "n2", n2);
  auto& changes = state_of(n2).interest_changes_received;
  EXPECT_EQ(changes, 0u);
  auto s1 = spawn_session();
  auto s2 = spawn_session();
  subscribe(s1, 1, "orders.*");
  EXPECT_EQ(changes, 1u);
  EXPECT_EQ(interest_at(n2, "n1"), (std::set<std::string>{"orders.*"}));
  subscribe(s2, 1, "orders.*"); // 1 -> 2: nothing crosses
  EXPECT_EQ(changes, 1u);
  subscribe(s2, 2, "orders.eu");
  EXPECT_EQ(changes, 2u);
  unsubscribe(s1, 1); // 2 -> 1
  EXPECT_EQ(changes, 2u);
  unsubscribe(s2, 1); // 1 -> 0
  EXPECT_EQ(changes, 3u);
  EXPECT_EQ(interest_at(n2, "n1"), (std::set<std::string>{"orders.eu"}));
  self->send_exit(s2.hdl, caf::exit_reason::user_shutdown); // its last one
  run();
  EXPECT_EQ(changes, 4u);
  EXPECT_TRUE(interest_at(n2, "n1").empty());
  // A peer's interest is not a subscription in the router's counters.
  EXPECT_EQ(router_stats().subscriptions, 0u);
}

TEST_F(ClusterFanout, AFrameCrossesOnceToAPeerWhateverItsSubscriberCount) {
  auto n2 = spawn_node();
  connect("n1", router, "n2", n2);
  auto pub = session_on(n2);
  publish(pub, "t.x", 1, "early"); // the topic exists before the interest
  auto a = spawn_session();
  auto b = spawn_session();
  auto c = spawn_session();
  subscribe(a, 1, "t.x");
  subscribe(b, 1, "t.x");
  subscribe(c, 1, "t.*");
  subscribe(c, 2, "t.>"); // two patterns of one node match: still one copy
  publish(pub, "t.x", 4);
  strings four{"m0", "m1", "m2", "m3"};
  EXPECT_EQ(a.sink->payloads(), four);
  EXPECT_EQ(b.sink->payloads(), four);
  EXPECT_EQ(c.sink->payloads().size(), 8u); // two subscriptions
  auto link = out_stats(n2, "n1");
  EXPECT_EQ(link.messages_sent, 4u);
  EXPECT_EQ(link.batches_sent, 1u);
  EXPECT_EQ(route_at(n2, "t.x")->links.size(), 1u);
}

TEST_F(ClusterFanout, ThreeNodesDeliverOnlyToLocalSubscribersWithoutLoops) {
  auto n2 = spawn_node();
  auto n3 = spawn_node();
  connect("n1", router, "n2", n2);
  connect("n1", router, "n3", n3);
  connect("n2", n2, "n3", n3);
  auto s1 = spawn_session();
  auto s2 = session_on(n2);
  auto s3 = session_on(n3);
  subscribe(s1, 1, "t.>");
  subscribe(s2, 1, "t.>");
  subscribe(s3, 1, "t.>");
  auto pub = spawn_session();
  publish(pub, "t.a", 3);
  strings three{"m0", "m1", "m2"};
  EXPECT_EQ(s1.sink->payloads(), three);
  EXPECT_EQ(s2.sink->payloads(), three);
  EXPECT_EQ(s3.sink->payloads(), three);
  EXPECT_EQ(out_stats(router, "n2").messages_sent, 3u);
  EXPECT_EQ(out_stats(router, "n3").messages_sent, 3u);
  // What came from a link never goes to a link.
  EXPECT_EQ(out_stats(n2, "n1").messages_sent, 0u);
  EXPECT_EQ(out_stats(n2, "n3").messages_sent, 0u);
  EXPECT_EQ(out_stats(n3, "n1").messages_sent, 0u);
  EXPECT_EQ(out_stats(n3, "n2").messages_sent, 0u);
}

TEST_F(ClusterFanout, APublishersOrderHoldsAcrossTopicsThroughALink) {
  auto n2 = spawn_node();
  connect("n1", router, "n2", n2);
  auto sub = session_on(n2);
  subscribe(sub, 1, "a.>");
  subscribe(sub, 2, "b.>");
  auto pub = spawn_session();
  // Three frames before anything runs: the inbound side must resolve a.1
  // and b.1 first (its delivery session caches no route yet), and the
  // later frames must wait for that, not overtake it.
  send_frame(pub,
             publish_frame(next_request_id(), {make_message("a.1", "p0"),
                                               make_message("b.1", "p1")}));
  send_frame(pub,
             publish_frame(next_request_id(), {make_message("b.2", "p2"),
                                               make_message("a.1", "p3")}));
  send_frame(pub,
             publish_frame(next_request_id(), {make_message("a.9", "p4")}));
  run();
  EXPECT_EQ(sub.sink->payloads(), (strings{"p0", "p1", "p2", "p3", "p4"}));
}

TEST_F(ClusterFanout, SubscribedWaitsUntilEveryLivePeerAppliedIt) {
  auto n2 = spawn_node();
  connect("n1", router, "n2", n2);
  auto sub = spawn_session();
  send_frame(sub, subscribe_frame(next_request_id(), 1, "t.x"));
  run_except(n2); // n2 has not applied the new interest yet
  EXPECT_TRUE(sub.sink->of_kind(kind::kSubscribed).empty());
  run();
  EXPECT_EQ(sub.sink->of_kind(kind::kSubscribed).size(), 1u);
  // "Subscribe on n1, then publish on n2" never misses.
  auto pub = session_on(n2);
  publish(pub, "t.x", 1);
  EXPECT_EQ(sub.sink->payloads(), (strings{"m0"}));
}

TEST_F(ClusterFanout, SubscribedDoesNotWaitForAPeerThatWentDown) {
  auto n2 = spawn_node();
  connect("n1", router, "n2", n2);
  auto sub = spawn_session();
  send_frame(sub, subscribe_frame(next_request_id(), 1, "t.x"));
  run_except(n2);
  EXPECT_TRUE(sub.sink->of_kind(kind::kSubscribed).empty());
  self->send(router, tb::peer_down_atom_v, std::string{"n2"});
  run_except(n2); // n2 never answers (its node is gone)
  EXPECT_EQ(sub.sink->of_kind(kind::kSubscribed).size(), 1u);
  EXPECT_TRUE(state_of(router).peers.empty());
}

TEST_F(ClusterFanout, PeerDownDropsEverythingThePeerWasInterestedIn) {
  auto n2 = spawn_node();
  connect("n1", router, "n2", n2);
  auto sub = spawn_session();
  subscribe(sub, 1, "t.*");
  subscribe(sub, 2, "u.x");
  auto pub = session_on(n2);
  publish(pub, "t.a", 1);
  EXPECT_EQ(sub.sink->payloads(), (strings{"m0"}));
  auto link = peer_at(n2, "n1").outbound;
  ASSERT_EQ(route_at(n2, "t.a")->links.size(), 1u);
  self->send(n2, tb::peer_down_atom_v, std::string{"n1"});
  run();
  EXPECT_TRUE(state_of(n2).peers.empty());
  EXPECT_EQ(state_of(n2).peer_keys, 0u);
  EXPECT_TRUE(route_at(n2, "t.a")->links.empty());
  EXPECT_TRUE(terminated(link));
  publish(pub, "t.a", 1, "after");
  EXPECT_EQ(sub.sink->payloads(), (strings{"m0"}));
  EXPECT_EQ(stats(pub).unrouted, 1u);
}

TEST_F(ClusterFanout, ALinkKeepsAtMostItsWindowOfBatchesUnacknowledged) {
  tb::link_settings bounds;
  bounds.window_batches = 2;
  bounds.batch_messages = 1;
  auto n2 = spawn_node(bounds);
  connect("n1", router, "n2", n2);
  auto sub = spawn_session();
  subscribe(sub, 1, "t.x");
  auto inbound = peer_at(router, "n2").inbound;
  auto pub = session_on(n2);
  send_frame(pub, publish_frame(next_request_id(), "t.x", 5));
  run_except(inbound); // n1's inbound side does not ack
  auto link = out_stats(n2, "n1");
  EXPECT_EQ(link.batches_sent, 2u);
  EXPECT_EQ(link.in_flight_batches, 2u);
  EXPECT_EQ(link.buffered_messages, 3u);
  EXPECT_TRUE(sub.sink->payloads().empty());
  run();
  link = out_stats(n2, "n1");
  EXPECT_EQ(link.batches_sent, 5u);
  EXPECT_EQ(link.in_flight_batches, 0u);
  EXPECT_EQ(link.buffered_messages, 0u);
  EXPECT_EQ(sub.sink->payloads(), (strings{"m0", "m1", "m2", "m3", "m4"}));
}

TEST_F(ClusterFanout, APeerThatStopsAckingHasItsOldestMessagesDropped) {
  tb::link_settings bounds;
  bounds.window_batches = 1;
  bounds.batch_messages = 1;
  // Three messages of "t.x" + "mN", each with its bookkeeping.
  bounds.buffer_bytes = 3 * (5 + tb::link_message_overhead);
  auto n2 = spawn_node(bounds);
  connect("n1", router, "n2", n2);
  auto sub = spawn_session();
  subscribe(sub, 1, "t.x");
  auto inbound = peer_at(router, "n2").inbound;
  auto pub = session_on(n2);
  send_frame(pub, publish_frame(next_request_id(), "t.x", 10));
  run_except(inbound);
  auto link = out_stats(n2, "n1");
  EXPECT_EQ(link.in_flight_batches, 1u);
  EXPECT_EQ(link.buffered_messages, 3u);
  EXPECT_EQ(link.buffered_bytes, 3 * (5 + tb::link_message_overhead));
  EXPECT_EQ(link.dropped, 6u);
  run();
  EXPECT_EQ(sub.sink->payloads(), (strings{"m0", "m7", "m8", "m9"}));
  // The counters reach the router's stats path.
  auto peers = query<tb::peer_stats_list>(n2, tb::peers_atom_v);
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].name, "n1");
  EXPECT_TRUE(peers[0].synced);
  EXPECT_EQ(peers[0].interest_patterns, 1u);
  EXPECT_EQ(peers[0].link.dropped, 6u);
  EXPECT_EQ(peers[0].link.messages_sent, 4u);
  EXPECT_EQ(peers[0].link.buffered_bytes, 0u);
  auto back = query<tb::peer_stats_list>(router, tb::peers_atom_v);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].link.messages_received, 4u);
  EXPECT_EQ(back[0].link.batches_received, 4u);
}

TEST_F(ClusterFanout, ABigInterestSyncsInChunksBeforePeerUpIsAnswered) {
  auto n2 = spawn_node();
  auto sub = spawn_session();
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(next_request_id());
  for (int k = 0; k < 250; ++k) {
    auto* entry = frame->mutable_subscribe_batch()->add_subscriptions();
    entry->set_subscription_id(static_cast<uint64_t>(k + 1));
    entry->set_pattern("p" + std::to_string(k) + ".*");
  }
  send_frame(sub, frame);
  run();
  ASSERT_EQ(sub.sink->of_kind(kind::kSubscribedBatch).size(), 1u);
  // n2 learns of n1 first: its answer waits for n1's full interest.
  auto at_n2 = peer_up(n2, "n1", router);
  auto again = peer_up(n2, "n1", router); // a repeated peer_up is answered too
  run();
  EXPECT_TRUE(self->mailbox().empty());
  EXPECT_FALSE(peer_at(n2, "n1").synced);
  auto at_n1 = peer_up(router, "n2", n2);
  run();
  EXPECT_EQ(state_of(n2).sync_chunks_received, 3u); // 100 + 100 + 50
  EXPECT_EQ(interest_at(n2, "n1").size(), 250u);
  EXPECT_TRUE(peer_at(n2, "n1").synced);
  ASSERT_FALSE(self->mailbox().empty());
  at_n2.receive([](caf::ok_atom) {},
                [](caf::error& err) { ADD_FAILURE() << to_string(err); });
  at_n1.receive([](caf::ok_atom) {},
                [](caf::error& err) { ADD_FAILURE() << to_string(err); });
  ASSERT_FALSE(self->mailbox().empty()) << "the repeated peer_up waits";
  again.receive([](caf::ok_atom) {},
                [](caf::error& err) { ADD_FAILURE() << to_string(err); });
  auto pub = session_on(n2);
  publish(pub, "p7.x", 1);
  EXPECT_EQ(sub.sink->payloads(), (strings{"m0"}));
  EXPECT_EQ(out_stats(n2, "n1").messages_sent, 1u);
}

TEST_F(ClusterFanout, ADelayedMessageCrossesAtOnceAndWaitsOnTheReceivingNode) {
  auto n2 = spawn_node();
  connect("n1", router, "n2", n2);
  auto sub = session_on(n2);
  subscribe(sub, 1, "t.x");
  auto pub = spawn_session();
  auto msg = make_message("t.x", "later");
  msg.set_delay_ms(5000);
  send_frame(pub, publish_frame(next_request_id(), {msg}));
  run();
  EXPECT_EQ(out_stats(router, "n2").messages_sent, 1u);
  EXPECT_TRUE(sub.sink->payloads().empty());
  advance(4999ms);
  EXPECT_TRUE(sub.sink->payloads().empty());
  advance(1ms);
  EXPECT_EQ(sub.sink->payloads(), (strings{"later"}));
}

TEST_F(ClusterFanout, WhatALinkHeldWhenItsPeerWentDownIsCountedLost) {
  tb::link_settings bounds;
  bounds.window_batches = 2;
  bounds.batch_messages = 1;
  auto n2 = spawn_node(bounds);
  connect("n1", router, "n2", n2);
  auto sub = spawn_session();
  subscribe(sub, 1, "t.x");
  auto inbound = peer_at(router, "n2").inbound;
  auto pub = session_on(n2);
  publish(pub, "t.x", 3); // delivered and acknowledged: not lost
  EXPECT_EQ(sub.sink->payloads().size(), 3u);
  send_frame(pub, publish_frame(next_request_id(), "t.x", 5));
  run_except(inbound); // n1 stops acking: 2 in flight, 3 waiting
  EXPECT_EQ(out_stats(n2, "n1").in_flight_batches, 2u);
  EXPECT_EQ(out_stats(n2, "n1").buffered_messages, 3u);
  auto link = peer_at(n2, "n1").outbound;
  self->send(n2, tb::peer_down_atom_v, std::string{"n1"});
  run();
  EXPECT_TRUE(terminated(link));
  // The peer is down, and Stats still shows what went down with it.
  auto peers = query<tb::peer_stats_list>(n2, tb::peers_atom_v);
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].name, "n1");
  EXPECT_FALSE(peers[0].synced);
  EXPECT_EQ(peers[0].lost, 5u);
  EXPECT_EQ(peers[0].link.messages_sent, 0u); // the link is gone
}

TEST_F(ClusterFanout, LinkTypesSurviveSerialization) {
  // What crosses nodes: a link frame with a shared message.
  tb::link_frame frame;
  frame.seq = 7;
  frame.messages.push_back(tb::message_record::make(
      42, 1234, "t.x", "payload", "key", tb::header_list{{"h", "v"}}));
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  ASSERT_FALSE(sink(frame));
  tb::link_frame copy;
  caf::binary_deserializer source{sys, buf};
  ASSERT_FALSE(source(copy));
  EXPECT_EQ(copy.seq, 7u);
  ASSERT_EQ(copy.messages.size(), 1u);
  EXPECT_EQ(copy.messages[0]->id(), 42u);
  EXPECT_EQ(copy.messages[0]->topic(), "t.x");
  EXPECT_EQ(copy.messages[0]->payload(), "payload");
  EXPECT_EQ(copy.messages[0]->header("h").value_or(""), "v");
}

} // namespace
} // namespace tb::test
