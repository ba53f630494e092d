// Fan-out across nodes (issue 30 point 2, docs/cluster.md): two or three
// "nodes" in one actor system, each its own router, shards and sessions,
// connected by sending `peer_up` to each router with the other's router,
// as the cluster actor does over CAF's network layer. Interest crossing
// between nodes (a big one in chunks), one copy per peer, order,
// `Subscribed` and peer loss; the links' bounds are in
// cluster_fanout_link_test.cpp.

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/actors/cluster_fanout_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;
using strings = std::vector<std::string>;

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

} // namespace
} // namespace tb::test
