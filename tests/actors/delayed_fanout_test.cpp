// Tests of delayed fan-out (issue 29 point 2): a topic shard holds a delayed
// message and hands it to the fan-out subscriptions it was published to at
// its due time, in due-time order, with one timer per shard, bounded per
// topic and per broker; simulated time throughout.

#include <string>
#include <vector>

#include "actors/topic/delayed_fanout.hpp"
#include "tests/actors/actor_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

/// Builds a message to `topic` delayed by `delay_ms`.
pb::Message delayed(std::string topic, std::string payload, uint32_t delay_ms) {
  auto msg = make_message(std::move(topic), std::move(payload));
  msg.set_delay_ms(delay_ms);
  return msg;
}

/// A router whose shards hold at most 3 delayed messages per topic and 5
/// over all shards; one shard unless a test says otherwise.
class DelayedFanout : public actor_test {
protected:
  DelayedFanout()
      : actor_test([](tb::router_settings& settings) {
          settings.topic_shards = 1;
          settings.session_context.limits.max_delayed_fanout_per_topic = 3;
          settings.session_context.limits.max_delayed_fanout = 5;
        }) {
    // nop
  }

  /// Returns the one shard's state.
  tb::topic_shard_state& shard() {
    return deref<tb::topic_shard_state>(
        deref<tb::router_state>(router).shards.at(0));
  }

  /// Publishes `messages` from `session` with confirm, runs, and returns
  /// the results of the confirm.
  std::vector<pb::PublishResult>
  publish_all(const test_session& session, std::vector<pb::Message> messages) {
    auto before = session.sink->of_kind(kind::kPublishConfirm).size();
    send_frame(session, publish_frame(next_request_id(), std::move(messages)));
    run();
    auto confirms = session.sink->of_kind(kind::kPublishConfirm);
    EXPECT_EQ(confirms.size(), before + 1);
    if (confirms.size() != before + 1)
      return {};
    auto& results = confirms.back().publish_confirm().results();
    return {results.begin(), results.end()};
  }

  /// Returns the number of timers the test clock holds.
  std::size_t timers() {
    return sched.clock().schedule().size();
  }
};

TEST_F(DelayedFanout, ADelayedMessageReachesTheSubscriberAtItsDueTime) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "t.>");
  auto results = publish_all(pub, {delayed("t.a", "later", 5000)});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].has_error());
  EXPECT_GT(results[0].id(), 0u);
  EXPECT_TRUE(sub.sink->deliveries().empty());
  EXPECT_EQ(shard().delayed.size(), 1u);
  advance(4999ms);
  EXPECT_TRUE(sub.sink->deliveries().empty());
  advance(1ms);
  ASSERT_EQ(sub.sink->payloads(), std::vector<std::string>{"later"});
  EXPECT_EQ(sub.sink->deliveries()[0].message_id(), results[0].id());
  EXPECT_EQ(shard().delayed.size(), 0u);
  EXPECT_EQ(shard().delayed.fired(), 1u);
}

TEST_F(DelayedFanout, DueTimeOrderAndPublishOrderAmongEqualDueTimes) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "t.>");
  publish_all(pub, {delayed("t.a", "a300", 300), delayed("t.a", "b100", 100),
                    delayed("t.a", "c200", 200)});
  publish_all(pub, {delayed("t.b", "d100", 100)});
  advance(100ms);
  EXPECT_EQ(sub.sink->payloads(), (std::vector<std::string>{"b100", "d100"}));
  advance(100ms);
  advance(100ms);
  EXPECT_EQ(sub.sink->payloads(),
            (std::vector<std::string>{"b100", "d100", "c200", "a300"}));
}

TEST_F(DelayedFanout, AMessageWithoutDelayOvertakesADelayedOne) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "t.>");
  publish_all(pub, {delayed("t.a", "late", 1000), make_message("t.a", "now")});
  EXPECT_EQ(sub.sink->payloads(), std::vector<std::string>{"now"});
  advance(1000ms);
  EXPECT_EQ(sub.sink->payloads(), (std::vector<std::string>{"now", "late"}));
}

TEST_F(DelayedFanout, OneTimerPerShardArmedForTheEarliestDueTime) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "t.>");
  publish_all(pub, {make_message("t.a", "warm")}); // the route is cached
  auto before = timers();
  publish_all(pub, {delayed("t.a", "x", 700), delayed("t.b", "y", 200),
                    delayed("t.c", "z", 450)});
  EXPECT_EQ(timers(), before + 1);
  ASSERT_TRUE(shard().armed.has_value());
  EXPECT_EQ(*shard().armed, *shard().delayed.next_due());
  advance(200ms); // y fires; the timer is re-armed for z, still one
  EXPECT_EQ(timers(), before + 1);
  EXPECT_EQ(*shard().armed, *shard().delayed.next_due());
  advance(250ms);
  advance(250ms);
  EXPECT_EQ(sub.sink->payloads(),
            (std::vector<std::string>{"warm", "y", "z", "x"}));
  EXPECT_EQ(timers(), before); // nothing held, no timer
  EXPECT_FALSE(shard().armed.has_value());
}

TEST_F(DelayedFanout, PerTopicLimitRefusesWithResourceExhausted) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "t.>");
  auto results =
      publish_all(pub, {delayed("t.a", "1", 100), delayed("t.a", "2", 100),
                        delayed("t.a", "3", 100), delayed("t.a", "4", 100),
                        delayed("t.b", "5", 100)});
  ASSERT_EQ(results.size(), 5u);
  for (int i : {0, 1, 2, 4})
    EXPECT_FALSE(results[i].has_error()) << i;
  ASSERT_TRUE(results[3].has_error());
  EXPECT_EQ(results[3].error().code(), 8); // RESOURCE_EXHAUSTED
  EXPECT_EQ(results[3].error().reason(), "schedule_full");
  EXPECT_NE(
      results[3].error().message().find("limits.max_delayed_fanout_per_topic"),
      std::string::npos)
      << results[3].error().message();
  EXPECT_NE(results[3].error().message().find("\"t.a\""), std::string::npos);
  EXPECT_EQ(shard().delayed.refused(), 1u);
  advance(100ms);
  EXPECT_EQ(sub.sink->payloads(),
            (std::vector<std::string>{"1", "2", "3", "5"}));
  // Fired messages free their places.
  results = publish_all(pub, {delayed("t.a", "6", 100)});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].has_error());
}

TEST_F(DelayedFanout, BrokerLimitHoldsAcrossTopics) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "t.>");
  std::vector<pb::Message> batch;
  for (int i = 0; i < 6; ++i)
    batch.push_back(delayed("t." + std::to_string(i), std::to_string(i), 50));
  auto results = publish_all(pub, std::move(batch));
  ASSERT_EQ(results.size(), 6u);
  for (int i = 0; i < 5; ++i)
    EXPECT_FALSE(results[i].has_error()) << i;
  ASSERT_TRUE(results[5].has_error());
  EXPECT_EQ(results[5].error().code(), 8);
  EXPECT_NE(results[5].error().message().find("limits.max_delayed_fanout"),
            std::string::npos)
      << results[5].error().message();
  EXPECT_EQ(stats(pub).refused, 1u);
  advance(50ms);
  EXPECT_EQ(sub.sink->deliveries().size(), 5u);
}

TEST_F(DelayedFanout, NothingIsHeldWithoutAFanoutSubscriber) {
  auto pub = spawn_session();
  auto results = publish_all(pub, {delayed("t.a", "nobody", 100)});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].has_error());
  EXPECT_EQ(shard().delayed.size(), 0u);
  EXPECT_EQ(stats(pub).unrouted, 1u);
}

TEST_F(DelayedFanout, ItGoesToTheSubscriptionsOfItsPublishTimeThatStillExist) {
  auto pub = spawn_session();
  auto stays = spawn_session();
  auto leaves = spawn_session();
  auto late = spawn_session();
  subscribe(stays, 1, "t.a");
  subscribe(leaves, 1, "t.a");
  publish_all(pub, {delayed("t.a", "m", 100)});
  send_frame(leaves, unsubscribe_frame(next_request_id(), 1));
  run();
  subscribe(late, 1, "t.a"); // after the message was accepted (spec 5)
  advance(100ms);
  EXPECT_EQ(stays.sink->payloads(), std::vector<std::string>{"m"});
  EXPECT_TRUE(leaves.sink->deliveries().empty());
  EXPECT_TRUE(late.sink->deliveries().empty());
}

/// The fixture with bounds above a burst.
class DelayedFanoutBurst : public DelayedFanout {
protected:
  DelayedFanoutBurst() {
    run(); // the router spawns its shard
    shard().delayed = tb::delayed_fanout{1'000'000, nullptr};
  }
};

TEST_F(DelayedFanoutBurst, ABurstOfDueMessagesLeavesInBatchesAPauseApart) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "t.a");
  constexpr std::size_t n = tb::due_batch + 100;
  for (std::size_t first = 0; first < n; first += 1000) {
    std::vector<pb::Message> batch;
    for (auto i = first; i < std::min(n, first + 1000); ++i)
      batch.push_back(delayed("t.a", std::to_string(i), 10));
    publish_all(pub, std::move(batch));
  }
  ASSERT_EQ(shard().delayed.size(), n);
  sched.advance_time(10ms);
  auto hdl = deref<tb::router_state>(router).shards.at(0);
  run_one(hdl);
  EXPECT_EQ(shard().delayed.size(), n - tb::due_batch);
  run();
  EXPECT_EQ(shard().delayed.size(), n - tb::due_batch); // waits a pause
  advance(tb::due_pause);
  EXPECT_EQ(shard().delayed.size(), 0u);
  auto got = sub.sink->payloads();
  ASSERT_EQ(got.size(), n);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], std::to_string(i));
}

TEST_F(DelayedFanout, StatsShowTheHeldMessagesAndTheNextDueTime) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "t.>");
  publish_all(pub, {delayed("t.a", "x", 60000), delayed("t.b", "y", 30000)});
  auto hdl = deref<tb::router_state>(router).shards.at(0);
  auto view = query<tb::shard_view>(hdl, tb::stats_atom_v, tb::stats_query{});
  EXPECT_EQ(view.scheduled, 2u);
  auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  EXPECT_GE(view.next_due_unix_ms, now_ms + 29000);
  EXPECT_LE(view.next_due_unix_ms, now_ms + 31000);
  advance(30000ms);
  view = query<tb::shard_view>(hdl, tb::stats_atom_v, tb::stats_query{});
  EXPECT_EQ(view.scheduled, 1u);
  EXPECT_EQ(view.scheduled_fired, 1u);
}

// -- TTL in a subscriber's buffer (issue 29 point 1)
// ---------------------------

using FanoutTtl = actor_test;

/// Returns a message to `topic` accepted `age` ago with a TTL of `ttl`.
tb::message_ref aged(uint64_t id, const std::string& topic,
                     std::chrono::milliseconds age,
                     std::chrono::milliseconds ttl) {
  auto accepted = std::chrono::system_clock::now() - age;
  return tb::message_record::make(
      id,
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          accepted.time_since_epoch())
          .count(),
      topic, "p" + std::to_string(id), "", tb::header_list{},
      tb::message_timing{static_cast<uint32_t>(ttl.count()), 0, 0});
}

TEST_F(FanoutTtl, AnExpiredMessageIsDroppedUnwrittenAndReportedWithItsReason) {
  auto sub = spawn_session();
  subscribe(sub, 1, "t.>");
  tb::fanout_batch batch;
  batch.items.push_back({aged(1, "t.a", 10s, 1s), 1});  // expired
  batch.items.push_back({aged(2, "t.a", 10s, 60s), 1}); // within its TTL
  batch.items.push_back({aged(3, "t.a", 10s, 0s), 1});  // no TTL
  self->send(sub.hdl, tb::deliver_atom_v, std::move(batch));
  run();
  EXPECT_EQ(sub.sink->payloads(), (std::vector<std::string>{"p2", "p3"}));
  auto dropped = sub.sink->of_kind(kind::kDropped);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].dropped().subscription_id(), 1u);
  EXPECT_EQ(dropped[0].dropped().count(), 1u);
  EXPECT_EQ(dropped[0].dropped().total(), 1u);
  EXPECT_EQ(dropped[0].dropped().reason(), "expired");
  auto counters = stats(sub);
  EXPECT_EQ(counters.expired, 1u);
  EXPECT_EQ(counters.dropped, 0u);
  EXPECT_EQ(counters.delivered, 2u);
}

TEST_F(FanoutTtl, ASlowSubscriberLosesExpiredMessagesWhileItDoesNotRead) {
  auto sub = spawn_session();
  subscribe(sub, 1, "t.>");
  sub.sink->set_busy(); // a write is under way: nothing more is written
  tb::fanout_batch batch;
  for (uint64_t id = 1; id <= 4; ++id)
    batch.items.push_back({aged(id, "t.a", 10s, id % 2 ? 1s : 60s), 1});
  self->send(sub.hdl, tb::deliver_atom_v, std::move(batch));
  run();
  EXPECT_TRUE(sub.sink->deliveries().empty());
  sub.sink->complete_write();
  run();
  EXPECT_EQ(sub.sink->payloads(), (std::vector<std::string>{"p2", "p4"}));
  auto dropped = sub.sink->of_kind(kind::kDropped);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].dropped().count(), 2u);
  EXPECT_EQ(dropped[0].dropped().reason(), "expired");
}

} // namespace
} // namespace tb::test
