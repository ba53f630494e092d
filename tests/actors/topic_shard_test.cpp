// Tests of the topic shards at scale: one resolve for many new topics, a
// route cache sized by limits.max_routes_per_session, bulk expiry in
// batches that let other requests through, subscribes that do not copy
// the whole fan-out list of a topic, and subscribes the router waits for by
// ticket rather than by CAF request.

#include <string>
#include <vector>

#include <caf/event_based_actor.hpp>

#include "tests/actors/actor_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

/// A router with one shard, so that every topic lands in it.
class TopicShard : public actor_test {
protected:
  TopicShard()
      : actor_test(
            [](tb::router_settings& settings) { settings.topic_shards = 1; }) {
    // nop
  }

  /// Returns the one shard's state.
  tb::topic_shard_state& shard() {
    return deref<tb::topic_shard_state>(
        deref<tb::router_state>(router).shards.at(0));
  }

  /// Publishes one message to each of `n` new topics `spread.<i>`, in frames
  /// of 1000, and runs.
  void publish_spread(const test_session& session, int n) {
    for (int first = 0; first < n; first += 1000) {
      std::vector<pb::Message> batch;
      for (int i = first; i < std::min(n, first + 1000); ++i)
        batch.push_back(make_message("spread." + std::to_string(i), "x"));
      send_frame(session, publish_frame(next_request_id(), batch));
    }
    run();
  }
};

TEST_F(TopicShard, OneResolveCreatesEveryNewTopicOfAFrame) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "spread.>");
  publish_spread(pub, 3000);
  EXPECT_EQ(live_topics(), 3000u);
  EXPECT_EQ(sub.sink->deliveries().size(), 3000u);
  EXPECT_EQ(stats(pub).cached_routes, 3000u); // more than the old 1,024
  // Every route is cached: publishing again creates nothing and asks no one.
  auto created = shard().created;
  publish_spread(pub, 3000);
  EXPECT_EQ(shard().created, created);
  EXPECT_EQ(sub.sink->deliveries().size(), 6000u);
}

TEST_F(TopicShard, RouteCacheHoldsMaxRoutesPerSession) {
  auto ctx = context();
  ctx.limits.max_routes_per_session = 10;
  auto pub = spawn_session(ctx);
  publish_spread(pub, 25);
  EXPECT_EQ(stats(pub).cached_routes, 10u);
  // The evicted routes were detached: only the cached ten have a cacher.
  std::size_t cached = 0;
  for (auto& [name, topic] : shard().topics)
    cached += topic.cachers.size();
  EXPECT_EQ(cached, 10u);
}

TEST_F(TopicShard, BulkExpiryGoesInBatchesThatLetOtherRequestsThrough) {
  constexpr int n = 5000;
  auto pub = spawn_session();
  publish_spread(pub, n);
  advance(route_idle); // the routes are marked unused
  advance(route_idle); // evicted: every topic is idle now
  ASSERT_EQ(live_topics(), static_cast<std::size_t>(n));
  sched.advance_time(topic_idle); // the expiry tick is due, not yet run
  auto hdl = deref<tb::router_state>(router).shards.at(0);
  run_one(hdl);
  EXPECT_EQ(live_topics(), n - tb::expiry_batch);
  // The next batch waits for a pause: a subscribe sent now is answered
  // before it.
  auto sub = spawn_session();
  send_frame(sub, subscribe_frame(next_request_id(), 1, "other.>"));
  run();
  EXPECT_EQ(sub.sink->of_kind(kind::kSubscribed).size(), 1u);
  EXPECT_EQ(live_topics(), n - tb::expiry_batch);
  for (int pauses = 0; pauses < n && live_topics() > 0; ++pauses)
    advance(tb::expiry_pause);
  EXPECT_EQ(live_topics(), 0u);
  EXPECT_EQ(shard().expired, static_cast<uint64_t>(n));
  EXPECT_EQ(shard().idle_head, nullptr);
  EXPECT_TRUE(shard().sessions.empty()); // no topic left to use
}

TEST_F(TopicShard, ATopicUsedAgainLeavesTheIdleList) {
  auto pub = spawn_session();
  publish(pub, "t.back");
  advance(route_idle);
  advance(route_idle); // idle now
  ASSERT_NE(shard().idle_head, nullptr);
  advance(topic_idle / 2);
  publish(pub, "t.back"); // cached again: out of the idle list
  EXPECT_EQ(shard().idle_head, nullptr);
  advance(topic_idle);
  EXPECT_EQ(live_topics(), 1u);
  EXPECT_EQ(stats(pub).published, 2u);
}

TEST_F(TopicShard, SubscribesShareTheUnchangedChunksOfTheFanOutList) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  publish(pub, "t.many");
  for (uint64_t id = 1; id <= 100; ++id)
    subscribe(sub, id, "t.many");
  auto before = topic("t.many")->current;
  subscribe(sub, 101, "t.many");
  auto after = topic("t.many")->current;
  ASSERT_EQ(after->fanout.size(), 101u);
  EXPECT_EQ(after->version, before->version + 1);
  // Every element of the first full chunks is the same object in both.
  auto i = before->fanout.begin();
  auto j = after->fanout.begin();
  for (std::size_t k = 0; k < 96; ++k, ++i, ++j)
    ASSERT_EQ(&*i, &*j) << k;
  publish(pub, "t.many");
  EXPECT_EQ(sub.sink->deliveries().size(), 101u);
}

TEST_F(TopicShard, ADeadSessionLeavesEveryRouteAndCacherList) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "spread.>");
  publish_spread(pub, 50);
  self->send_exit(sub.hdl, caf::exit_reason::user_shutdown);
  self->send_exit(pub.hdl, caf::exit_reason::user_shutdown);
  run();
  EXPECT_TRUE(shard().sessions.empty());
  for (auto& [name, topic] : shard().topics) {
    EXPECT_TRUE(topic.cachers.empty()) << name;
    EXPECT_TRUE(topic.current->fanout.empty()) << name;
    EXPECT_TRUE(topic.idle) << name;
  }
  advance(topic_idle);
  EXPECT_EQ(live_topics(), 0u);
}

TEST_F(TopicShard, ASubscribeWithATicketIsAnsweredWithItOnceInTheRoute) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  publish(pub, "t.ticket"); // the topic exists and pub caches its route
  uint64_t answered = 0;
  auto probe = sys.spawn([&](caf::event_based_actor*) -> caf::behavior {
    return {[&](tb::added_dest_atom, uint64_t ticket) {
      answered = ticket;
    }};
  });
  tb::fanout_subscriptions subs{{"t.*", tb::fanout_target{sub.hdl, 9}}};
  auto hdl = deref<tb::router_state>(router).shards.at(0);
  caf::send_as(probe, hdl, tb::add_dest_atom_v, subs, uint64_t{7});
  run();
  EXPECT_EQ(answered, 7u);
  auto route = topic("t.ticket")->current;
  ASSERT_EQ(route->fanout.size(), 1u);
  EXPECT_EQ(*route->fanout.begin(), (tb::fanout_target{sub.hdl, 9}));
  self->send_exit(probe, caf::exit_reason::user_shutdown);
  run();
}

/// The router with its default four shards.
class TopicShards : public actor_test {};

TEST_F(TopicShards, AWildcardSubscribeWaitsForEveryShardByTicket) {
  auto sub = spawn_session();
  run(); // the router spawned its shards
  auto& st = deref<tb::router_state>(router);
  ASSERT_EQ(st.shards.size(), 4u);
  send_frame(sub, subscribe_frame(next_request_id(), 1, "w.*"));
  // Step until the router sent the pattern to every shard.
  while (st.dest_waits.empty() && sched.try_run_once()) {
    // nop
  }
  EXPECT_EQ(st.dest_waits.size(), 4u); // a ticket per shard, no request
  auto confirmed = [&] {
    for (auto& frame : sub.sink->frames)
      if (frame.kind_case() == kind::kSubscribed)
        return true;
    return false;
  };
  EXPECT_FALSE(confirmed()); // not before the shards have it
  run();
  EXPECT_TRUE(confirmed());
  EXPECT_TRUE(st.dest_waits.empty());
}

TEST_F(TopicShards, AShardThatEndsAnswersItsTickets) {
  auto sub = spawn_session();
  auto& st = deref<tb::router_state>(router);
  send_frame(sub, subscribe_frame(next_request_id(), 1, "w.*"));
  while (st.dest_waits.empty() && sched.try_run_once()) {
    // nop
  }
  ASSERT_EQ(st.dest_waits.size(), 4u);
  // One shard ends before it handles the pattern: its ticket is answered
  // by the router itself (as a failed request was), the others by theirs.
  auto shard = st.shards.at(2);
  auto router_hdl = router;
  self->send_exit(shard, caf::exit_reason::kill);
  run();
  EXPECT_TRUE(deref<tb::router_state>(router_hdl).dest_waits.empty());
}

} // namespace
} // namespace tb::test
