// The links between nodes of the fan-out across nodes (issue 30 point 2,
// docs/cluster.md), nodes in one actor system as in cluster_fanout_test.cpp:
// a link's window of unacknowledged batches, its buffer dropping the oldest
// messages, what it held when its peer went down counted lost, a delayed
// message crossing at once, and the link's types serialized.

#include <string>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "tests/actors/cluster_fanout_fixture.hpp"

namespace tb::test {
namespace {

using strings = std::vector<std::string>;

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
