// Tests of SubscribeBatch frames: each entry is made or refused as a
// Subscribe would be, the frame is answered by one SubscribedBatch after the
// entries' errors, and the fan-out entries cost one router message and at
// most one message per topic shard, not one each.

#include <algorithm>
#include <string>
#include <vector>

#include "tests/actors/actor_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;
using ids = std::vector<uint64_t>;

/// One entry of a SubscribeBatch frame.
struct entry {
  uint64_t subscription_id;
  std::string pattern;
  std::string group = {};
};

/// Builds a SubscribeBatch frame of `entries`.
client_frame_ptr batch_frame(uint64_t request_id,
                             const std::vector<entry>& entries) {
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(request_id);
  auto* batch = frame->mutable_subscribe_batch();
  for (auto& e : entries) {
    auto* sub = batch->add_subscriptions();
    sub->set_subscription_id(e.subscription_id);
    sub->set_pattern(e.pattern);
    sub->set_group(e.group);
  }
  return frame;
}

class SubscribeBatch : public actor_test {
protected:
  /// Returns the ids of `frame`'s SubscribedBatch answer.
  static ids listed(const pb::ServerFrame& frame) {
    auto& answer = frame.subscribed_batch().subscription_ids();
    return {answer.begin(), answer.end()};
  }

  /// Returns true if `hdl` has mail to handle. (Not `mailbox().size()`:
  /// that reorders CAF's queues from outside, which UBSan reports.)
  template <class Handle>
  bool has_mail(const Handle& hdl) {
    return sched.prioritize(hdl);
  }

  test_session pub = spawn_session();
};

TEST_F(SubscribeBatch, EveryEntryIsInPlaceWhenTheOneAnswerComes) {
  auto s = spawn_session();
  send_frame(s, batch_frame(21, {{1, "a.one"}, {2, "a.two"}, {3, "b.*"}}));
  run();
  ASSERT_EQ(s.sink->frames.size(), 1u);
  auto& answer = s.sink->frames[0];
  ASSERT_TRUE(answer.has_subscribed_batch());
  EXPECT_EQ(answer.subscribed_batch().request_id(), 21u);
  EXPECT_EQ(listed(answer), (ids{1, 2, 3}));
  EXPECT_TRUE(s.sink->of_kind(kind::kSubscribed).empty());
  EXPECT_EQ(s.sink->consumed, 1u);
  publish(pub, "a.one", 1, "x");
  publish(pub, "a.two", 1, "y");
  publish(pub, "b.c", 1, "z");
  auto got = s.sink->deliveries();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].subscription_id(), 1u);
  EXPECT_EQ(got[1].subscription_id(), 2u);
  EXPECT_EQ(got[2].subscription_id(), 3u);
  EXPECT_EQ(router_stats().subscriptions, 3u);
}

TEST_F(SubscribeBatch, RefusedEntriesGetAnErrorEachBeforeTheAnswer) {
  auto s = spawn_session();
  send_frame(
      s,
      batch_frame(
          22, {{1, "a.one"}, {2, "a..bad"}, {1, "a.again"}, {3, "a.three"}}));
  run();
  ASSERT_EQ(s.sink->frames.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    auto& frame = s.sink->frames[i];
    ASSERT_TRUE(frame.has_error()) << frame.ShortDebugString();
    EXPECT_EQ(frame.error().request_id(), 22u);
    EXPECT_EQ(frame.error().request(), "subscribe");
  }
  EXPECT_EQ(s.sink->frames[0].error().subscription_id(), 2u);
  EXPECT_EQ(s.sink->frames[0].error().error().reason(), "invalid_pattern");
  EXPECT_EQ(s.sink->frames[1].error().subscription_id(), 1u);
  EXPECT_EQ(s.sink->frames[1].error().error().reason(), "invalid_request");
  EXPECT_EQ(listed(s.sink->frames[2]), (ids{1, 3}));
  publish(pub, "a.again");
  EXPECT_TRUE(s.sink->deliveries().empty());
}

TEST_F(SubscribeBatch, AllRefusedStillEndsWithAnEmptyAnswer) {
  auto s = spawn_session();
  send_frame(s, batch_frame(23, {{1, ""}, {2, "x..y"}}));
  run();
  ASSERT_EQ(s.sink->frames.size(), 3u);
  EXPECT_EQ(s.sink->of_kind(kind::kError).size(), 2u);
  ASSERT_TRUE(s.sink->frames[2].has_subscribed_batch());
  EXPECT_TRUE(listed(s.sink->frames[2]).empty());
  EXPECT_EQ(s.sink->frames[2].subscribed_batch().request_id(), 23u);
}

TEST_F(SubscribeBatch, FanOutEntriesCostOneRouterMessageAndOnePerShard) {
  auto s = spawn_session();
  // Live topics, so that the shards change routes and push them.
  for (int i = 0; i < 40; ++i)
    publish(pub, "live." + std::to_string(i));
  std::vector<entry> entries;
  for (uint64_t i = 0; i < 40; ++i)
    entries.push_back({i + 1, "live." + std::to_string(i)});
  entries.push_back({41, "live.*"});
  send_frame(s, batch_frame(24, entries));
  run_except(router);
  run_one(router);                // the one request for 41 subscriptions ...
  EXPECT_FALSE(has_mail(router)); // ... and no other
  for (auto& shard : deref<router_state>(router).shards) {
    run_one(shard); // literal ones spread, `live.*` in each ...
    EXPECT_FALSE(has_mail(shard)) << "more than one message for a shard";
  }
  run();
  auto answers = s.sink->of_kind(kind::kSubscribedBatch);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(listed(answers[0]).size(), 41u);
  publish(pub, "live.7");
  auto got = s.sink->deliveries();
  ASSERT_EQ(got.size(), 2u); // `live.7` and `live.*`
}

TEST_F(SubscribeBatch, ManySubscriptionsToOneCachedTopicPushItsRouteOnce) {
  publish(pub, "hot.topic"); // `pub` caches the topic's route
  auto s = spawn_session();
  std::vector<entry> entries;
  for (uint64_t i = 1; i <= 10; ++i)
    entries.push_back({i, "hot.topic"});
  auto version = topic("hot.topic")->current->version;
  send_frame(s, batch_frame(31, entries));
  run();
  // One new route version with all ten, not ten versions.
  EXPECT_EQ(topic("hot.topic")->current->version, version + 1);
  EXPECT_EQ(topic("hot.topic")->current->fanout.size(), 10u);
  auto answers = s.sink->of_kind(kind::kSubscribedBatch);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(listed(answers[0]).size(), 10u);
  publish(pub, "hot.topic");
  EXPECT_EQ(s.sink->deliveries().size(), 10u);
}

TEST_F(SubscribeBatch, GroupEntriesJoinAndAreListedWithTheFanOutOnes) {
  auto s = spawn_session();
  send_frame(s, batch_frame(25, {{1, "jobs.*", "workers"}, {2, "news.*"}}));
  run();
  auto answers = s.sink->of_kind(kind::kSubscribedBatch);
  ASSERT_EQ(answers.size(), 1u);
  auto got = listed(answers[0]);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (ids{1, 2}));
  publish(pub, "jobs.a", 1, "job");
  publish(pub, "news.a", 1, "news");
  auto deliveries = s.sink->deliveries();
  ASSERT_EQ(deliveries.size(), 2u);
  EXPECT_EQ(deliveries[0].subscription_id(), 1u);
  EXPECT_NE(deliveries[0].delivery_id(), 0u); // a group delivery
  EXPECT_EQ(deliveries[1].subscription_id(), 2u);
}

TEST_F(SubscribeBatch, ABatchOverTheLimitIsRefusedWhole) {
  auto ctx = context();
  ctx.limits.max_subscribe_batch = 2;
  auto s = spawn_session(ctx);
  send_frame(s, batch_frame(26, {{1, "a.a"}, {2, "a.b"}, {3, "a.c"}}));
  run();
  ASSERT_EQ(s.sink->frames.size(), 1u);
  auto& error = s.sink->frames[0].error();
  EXPECT_EQ(error.request_id(), 26u);
  EXPECT_EQ(error.error().reason(), "limit_exceeded");
  EXPECT_NE(error.error().message().find("max_subscribe_batch"),
            std::string::npos);
  EXPECT_EQ(router_stats().subscriptions, 0u);
  send_frame(s, batch_frame(27, {{1, "a.a"}, {2, "a.b"}}));
  run();
  auto answers = s.sink->of_kind(kind::kSubscribedBatch);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(listed(answers[0]), (ids{1, 2}));
}

TEST_F(SubscribeBatch, TheSessionLimitCountsEachEntry) {
  auto ctx = context();
  ctx.limits.max_subscriptions_per_session = 2;
  auto s = spawn_session(ctx);
  send_frame(s, batch_frame(28, {{1, "a.a"}, {2, "a.b"}, {3, "a.c"}}));
  run();
  auto errors = s.sink->of_kind(kind::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].error().subscription_id(), 3u);
  EXPECT_EQ(errors[0].error().error().reason(), "limit_exceeded");
  auto answers = s.sink->of_kind(kind::kSubscribedBatch);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(listed(answers[0]), (ids{1, 2}));
}

TEST_F(SubscribeBatch, AnEntryUnsubscribedBeforeItsAnswerIsNotListed) {
  auto s = spawn_session();
  send_frame(s, batch_frame(29, {{1, "a.a"}, {2, "a.b"}}));
  send_frame(s, unsubscribe_frame(30, 2));
  run_except(router);
  run();
  auto answers = s.sink->of_kind(kind::kSubscribedBatch);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(listed(answers[0]), (ids{1}));
  EXPECT_EQ(s.sink->of_kind(kind::kUnsubscribed).size(), 1u);
}

} // namespace
} // namespace tb::test
