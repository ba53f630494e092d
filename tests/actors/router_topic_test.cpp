// Tests of routing through the router and topic actors, driven by real
// session actors: matching, route caches, unsubscribe, dead sessions, topic
// expiry, publish order and the broker's `$` space.

#include <string>
#include <vector>

#include "tests/actors/actor_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

/// A router with a publishing and a subscribing session.
class RouterTopic : public actor_test {
protected:
  /// Returns the topic's counters; the topic must be live.
  tb::topic_stats topic_stats(const std::string& name) {
    auto view = query<tb::shard_view>(shard_of(name), tb::stats_atom_v,
                                      tb::stats_query{name, 1});
    EXPECT_EQ(view.topics.size(), 1u) << "no topic " << name;
    if (view.topics.empty())
      return {};
    return view.topics[0];
  }

  /// Returns the results of the last confirm `session` received.
  std::vector<pb::PublishResult> last_confirm(const test_session& session) {
    auto confirms = session.sink->of_kind(kind::kPublishConfirm);
    EXPECT_FALSE(confirms.empty());
    if (confirms.empty())
      return {};
    auto& results = confirms.back().publish_confirm().results();
    return {results.begin(), results.end()};
  }

  test_session pub = spawn_session();
  test_session sub = spawn_session();
};

using strings = std::vector<std::string>;

TEST_F(RouterTopic, LiteralSubscriptionReceivesTopicPayloadAndIds) {
  subscribe(sub, 1, "orders.eu.created");
  ASSERT_EQ(sub.sink->of_kind(kind::kSubscribed).size(), 1u);
  publish(pub, "orders.eu.created", 1, "hello");
  auto results = last_confirm(pub);
  ASSERT_EQ(results.size(), 1u);
  auto got = sub.sink->deliveries();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].subscription_id(), 1u);
  EXPECT_EQ(got[0].topic(), "orders.eu.created");
  EXPECT_EQ(got[0].payload(), "hello0");
  EXPECT_NE(got[0].message_id(), 0u);
  EXPECT_EQ(got[0].message_id(), results[0].id());
  EXPECT_GT(got[0].accepted_unix_nanos(), 0);
}

TEST_F(RouterTopic, WildcardSubscriptionReceivesOnlyMatchingTopics) {
  subscribe(sub, 1, "orders.*.created");
  publish(pub, "orders.eu.created", 1, "c");
  publish(pub, "orders.eu.paid", 1, "p");
  publish(pub, "orders.eu.created.v2", 1, "v");
  EXPECT_EQ(sub.sink->payloads(), (strings{"c0"}));
  EXPECT_EQ(stats(pub).unrouted, 2u);
}

TEST_F(RouterTopic, TopicAppearingAfterWildcardSubscriptionRoutesToIt) {
  subscribe(sub, 1, "orders.>");
  EXPECT_EQ(live_topics(), 0u);
  publish(pub, "orders.eu.created", 2);
  EXPECT_EQ(sub.sink->payloads(), (strings{"m0", "m1"}));
  EXPECT_EQ(live_topics(), 1u);
  EXPECT_EQ(topic_stats("orders.eu.created").destinations, 1u);
}

TEST_F(RouterTopic, SubscribeUpdatesPublisherCacheBeforeSubscribedIsWritten) {
  publish(pub, "orders.eu", 1, "early");
  EXPECT_EQ(stats(pub).unrouted, 1u);
  bool checked = false;
  sub.sink->on_write = [&](const pb::ServerFrame& frame) {
    if (!frame.has_subscribed())
      return;
    checked = true;
    auto* cached = deref<tb::session_state>(pub.hdl).routes.find("orders.eu");
    ASSERT_NE(cached, nullptr);
    auto fanout = (*cached)->fanout.to_vector();
    ASSERT_EQ(fanout.size(), 1u);
    EXPECT_EQ(fanout[0].session, sub.hdl);
    EXPECT_EQ(fanout[0].subscription_id, 1u);
  };
  subscribe(sub, 1, "orders.*");
  EXPECT_TRUE(checked) << "no Subscribed frame";
  publish(pub, "orders.eu", 1, "late");
  EXPECT_EQ(sub.sink->payloads(), (strings{"late0"}));
}

TEST_F(RouterTopic, UnsubscribeStopsDeliveries) {
  subscribe(sub, 1, "orders.eu");
  publish(pub, "orders.eu", 1, "before");
  send_frame(sub, unsubscribe_frame(7, 1));
  run();
  auto unsubscribed = sub.sink->of_kind(kind::kUnsubscribed);
  ASSERT_EQ(unsubscribed.size(), 1u);
  EXPECT_EQ(unsubscribed[0].unsubscribed().subscription_id(), 1u);
  EXPECT_EQ(unsubscribed[0].unsubscribed().reason(), "");
  publish(pub, "orders.eu", 1, "after");
  EXPECT_EQ(sub.sink->payloads(), (strings{"before0"}));
  EXPECT_EQ(sub.sink->frames.back().kind_case(), kind::kUnsubscribed);
  EXPECT_EQ(topic_stats("orders.eu").destinations, 0u);
  EXPECT_EQ(router_stats().subscriptions, 0u);
  EXPECT_EQ(stats(pub).unrouted, 1u);
}

TEST_F(RouterTopic, DeadSessionDisappearsFromEveryTopic) {
  subscribe(sub, 1, "orders.>");
  subscribe(sub, 2, "billing.x");
  publish(pub, "orders.a");
  publish(pub, "billing.x");
  ASSERT_EQ(sub.sink->deliveries().size(), 2u);
  auto before = router_stats();
  EXPECT_EQ(before.subscriptions, 2u);
  EXPECT_EQ(before.sessions, 1u);
  self->send_exit(sub.hdl, caf::exit_reason::user_shutdown);
  run();
  EXPECT_TRUE(terminated(sub.hdl));
  EXPECT_TRUE(sub.sink->finished);
  EXPECT_EQ(sub.sink->finish_code, ec::shutting_down);
  auto after = router_stats();
  EXPECT_EQ(after.subscriptions, 0u);
  EXPECT_EQ(after.sessions, 0u);
  EXPECT_EQ(after.topics, 2u); // the publisher still caches both
  for (auto name : {"orders.a", "billing.x"}) {
    EXPECT_EQ(topic_stats(name).destinations, 0u) << name;
    EXPECT_EQ(topic_stats(name).cachers, 1u) << name;
  }
  auto unrouted = stats(pub).unrouted;
  publish(pub, "orders.a");
  publish(pub, "billing.x");
  EXPECT_EQ(stats(pub).unrouted, unrouted + 2);
}

TEST_F(RouterTopic, SubscribeToTopicThatNobodyCachesIsConfirmed) {
  subscribe(sub, 1, "x.>");
  publish(pub, "x.y", 1, "a");
  advance(route_idle);
  advance(route_idle); // the publisher no longer caches x.y
  ASSERT_EQ(topic_stats("x.y").cachers, 0u);
  auto late = spawn_session();
  subscribe(late, 1, "x.y");
  EXPECT_EQ(late.sink->of_kind(kind::kSubscribed).size(), 1u);
  EXPECT_EQ(topic_stats("x.y").destinations, 2u);
  publish(pub, "x.y", 1, "b");
  EXPECT_EQ(late.sink->payloads(), (strings{"b0"}));
}

TEST_F(RouterTopic, LateRouteUpdateDoesNotHideALaterSubscriber) {
  // Spec 5: a confirmed subscription gets every later message. Here the
  // publisher evicts x.y while the topic is pushing it route v1 {sub}, then
  // publishes to x.y again: its resolve answer v2 {sub, late} is newer, but
  // `await` handles it before the older v1, which then overwrites it.
  auto late = spawn_session();
  publish(pub, "x.y", 1, "cached");
  advance(route_idle);            // sweep 1: the route is now unused
  sched.advance_time(route_idle); // sweep 2 is due, not yet run
  send_frame(pub, publish_frame(1, {make_message("x.y", "first")}));
  send_frame(sub, subscribe_frame(2, 1, "x.y"));
  run_except(pub.hdl); // topic pushes route v1 {sub} to the publisher
  run_one(pub.hdl);    // sweep 2: evicts x.y, detaches
  send_frame(late, subscribe_frame(3, 1, "x.y"));
  run_except(pub.hdl); // topic: detach, then v2 {sub, late} for nobody
  ASSERT_EQ(late.sink->of_kind(kind::kSubscribed).size(), 1u);
  run(); // publisher: resolve -> v2, then the late update v1
  ASSERT_EQ(sub.sink->of_kind(kind::kSubscribed).size(), 1u);
  publish(pub, "x.y", 1, "second");
  EXPECT_EQ(late.sink->payloads(), (strings{"first", "second0"}));
  EXPECT_EQ(sub.sink->payloads(), (strings{"first", "second0"}));
}

TEST_F(RouterTopic, UnusedTopicExpiresAfterPublisherSweepsItsRoute) {
  publish(pub, "t.idle");
  EXPECT_EQ(live_topics(), 1u);
  advance(route_idle); // first sweep: the route was used, now marked unused
  EXPECT_EQ(stats(pub).cached_routes, 1u);
  advance(route_idle); // second sweep: evicted, the topic is told
  EXPECT_EQ(stats(pub).cached_routes, 0u);
  EXPECT_EQ(live_topics(), 1u); // idle countdown running
  EXPECT_EQ(topic_stats("t.idle").cachers, 0u);
  advance(topic_idle);
  EXPECT_EQ(live_topics(), 0u);
  EXPECT_FALSE(topic("t.idle"));
  // Publishing again brings the topic back.
  publish(pub, "t.idle");
  EXPECT_EQ(live_topics(), 1u);
  EXPECT_EQ(last_confirm(pub).size(), 1u);
}

TEST_F(RouterTopic, StoppingTheRouterStopsItsShards) {
  publish(pub, "t.a");
  subscribe(sub, 1, "t.b");
  publish(pub, "t.b");
  ASSERT_TRUE(topic("t.a") && topic("t.b"));
  auto shards = deref<tb::router_state>(router).shards;
  ASSERT_EQ(shards.size(), 4u);
  self->send_exit(router, caf::exit_reason::user_shutdown);
  run();
  EXPECT_TRUE(terminated(router));
  for (auto& shard : shards)
    EXPECT_TRUE(terminated(shard));
}

TEST_F(RouterTopic, TopicWithSubscriberOutlivesIdleTimeouts) {
  subscribe(sub, 1, "t.kept");
  publish(pub, "t.kept", 1, "a");
  advance(route_idle);
  advance(route_idle);
  advance(topic_idle);
  advance(topic_idle);
  EXPECT_EQ(live_topics(), 1u);
  publish(pub, "t.kept", 1, "b");
  EXPECT_EQ(sub.sink->payloads(), (strings{"a0", "b0"}));
}

TEST_F(RouterTopic, OnePublisherKeepsItsOrderAcrossTopics) {
  subscribe(sub, 1, "orders.>");
  publish(pub, "orders.1.paid", 1, "warm"); // cached: routed at once
  send_frame(pub, publish_frame(1, {make_message("orders.1.created", "c")}));
  send_frame(pub, publish_frame(2, {make_message("orders.1.paid", "p")}));
  run();
  EXPECT_EQ(sub.sink->payloads(), (strings{"warm0", "c", "p"}));
}

TEST_F(RouterTopic, LongInterleavedSequenceArrivesInPublishOrder) {
  subscribe(sub, 1, "orders.>");
  strings expected;
  for (int t = 0; t < 7; t += 2) { // half the topics start cached
    auto topic = "orders." + std::to_string(t) + ".paid";
    publish(pub, topic, 1, "warm");
    expected.push_back("warm0");
  }
  for (int i = 0; i < 60; ++i) {
    std::vector<pb::Message> batch;
    for (int k = 0; k < i % 4 + 1; ++k) {
      auto n = std::to_string(i * 4 + k);
      auto event = (i + k) % 2 == 0 ? ".created" : ".paid";
      batch.push_back(
          make_message("orders." + std::to_string(i % 7) + event, "o" + n));
      batch.push_back(make_message("billing." + std::to_string(i % 3), "b"));
      expected.push_back("o" + n);
    }
    send_frame(pub, publish_frame(static_cast<uint64_t>(i), batch));
  }
  run();
  EXPECT_EQ(sub.sink->payloads(), expected);
  auto got = sub.sink->deliveries();
  for (size_t k = 1; k < got.size(); ++k)
    EXPECT_LT(got[k - 1].message_id(), got[k].message_id());
}

TEST_F(RouterTopic, PublishToSystemTopicIsDeniedAndNotRouted) {
  subscribe(sub, 1, ">");
  subscribe(sub, 2, "$sys.>");
  send_frame(pub, publish_frame(1, {make_message("$sys.x", "secret"),
                                    make_message("ok.x", "fine")}));
  run();
  auto results = last_confirm(pub);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].id(), 0u);
  EXPECT_EQ(results[0].error().code(), 7); // PERMISSION_DENIED
  EXPECT_EQ(results[0].error().reason(), "reserved_topic");
  EXPECT_NE(results[1].id(), 0u);
  EXPECT_FALSE(results[1].has_error());
  EXPECT_EQ(sub.sink->payloads(), (strings{"fine"}));
  EXPECT_FALSE(topic("$sys.x"));
  EXPECT_EQ(stats(pub).published, 1u);
}

TEST_F(RouterTopic, RootWildcardsNeverReachSystemTopics) {
  // Clients cannot publish to `$` topics, so the route is checked directly
  // with a resolve, as the broker's own publishers (dead letters) would.
  auto dlq = spawn_session();
  subscribe(sub, 1, ">");
  subscribe(sub, 2, "*.billing");
  subscribe(dlq, 1, "$dlq.>");
  auto routes = query<tb::route_list>(router, tb::resolve_atom_v,
                                      strings{"$dlq.billing"}, pub.hdl);
  ASSERT_EQ(routes.size(), 1u);
  ASSERT_TRUE(routes[0].ptr);
  auto fanout = routes[0]->fanout.to_vector();
  ASSERT_EQ(fanout.size(), 1u);
  EXPECT_EQ(fanout[0].session, dlq.hdl);
  EXPECT_EQ(fanout[0].subscription_id, 1u);
  // Subscriptions made after the topic exists follow the same rule.
  subscribe(sub, 3, ">");
  subscribe(sub, 4, "*.*");
  subscribe(dlq, 2, "$dlq.billing");
  ASSERT_TRUE(topic("$dlq.billing"));
  auto& current = topic("$dlq.billing")->current;
  ASSERT_EQ(current->fanout.size(), 2u);
  for (auto& target : current->fanout)
    EXPECT_EQ(target.session, dlq.hdl);
}

} // namespace
} // namespace tb::test
