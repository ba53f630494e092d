// Tests of what the actors report for the Stats view (spec 11), in
// simulated time: the meters, a group's members, rates and ages, a session's
// refusals and latencies, and the router's view with its filters and the
// extension actors users register.

#include <algorithm>
#include <string>
#include <vector>

#include "actors/group/group_ledger.hpp"
#include "actors/meters.hpp"
#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;

// -- meters -------------------------------------------------------------------

TEST(LatencyHistogram, CountsEachLatencyInTheFirstBucketThatHoldsIt) {
  tb::latency_histogram h;
  h.record(40'000);         // 40 µs: first bucket (<= 50 µs)
  h.record(50'000);         // on the bound: still the first
  h.record(50'001);         // second bucket (<= 100 µs)
  h.record(-5);             // clock skew counts as 0
  h.record(20'000'000'000); // 20 s: past every bound
  ASSERT_EQ(h.counts.size(), tb::latency_histogram::bounds_ns.size() + 1);
  EXPECT_EQ(h.counts[0], 3u);
  EXPECT_EQ(h.counts[1], 1u);
  EXPECT_EQ(h.counts.back(), 1u);
  EXPECT_EQ(h.count, 5u);
  EXPECT_EQ(h.sum_ns, 40'000 + 50'000 + 50'001 + 20'000'000'000);
}

TEST(LatencyHistogram, MergesBucketByBucket) {
  tb::latency_histogram x;
  tb::latency_histogram y;
  tb::latency_histogram empty;
  x.record(1'000'000);
  y.record(1'000'000);
  y.record(30'000);
  x.merge(y);
  x.merge(empty);
  EXPECT_EQ(x.count, 3u);
  EXPECT_EQ(x.counts[0], 1u);
  EXPECT_EQ(x.counts[4], 2u); // <= 1 ms
  empty.merge(x);
  EXPECT_EQ(empty.count, 3u);
}

TEST(RateMeter, ReportsTheLastFullSecondAndTheLastTen) {
  tb::rate_meter meter;
  auto t0 = tb::rate_meter::time_point{} + 100s;
  meter.add(5, t0);
  meter.add(5, t0 + 500ms);
  meter.add(20, t0 + 1200ms);
  EXPECT_EQ(meter.per_second_last(t0 + 500ms), 0.0) << "second 100 not over";
  EXPECT_EQ(meter.per_second_last(t0 + 1500ms), 10.0);
  EXPECT_EQ(meter.per_second_last(t0 + 2100ms), 20.0);
  EXPECT_EQ(meter.per_second_last10(t0 + 2100ms), 3.0);
  EXPECT_EQ(meter.per_second_last10(t0 + 11s), 2.0) << "second 100 left";
  EXPECT_EQ(meter.per_second_last(t0 + 30s), 0.0);
  meter.add(7, t0 + 111s); // reuses second 100's slot
  EXPECT_EQ(meter.per_second_last(t0 + 112s), 7.0);
  EXPECT_EQ(meter.per_second_last10(t0 + 112s), 0.7);
}

TEST(GroupLedgerStats, TheOldestPendingMessageIsFoundAmongQueuedAndDelayed) {
  tb::group_ledger ledger;
  EXPECT_FALSE(ledger.oldest_pending_accepted().has_value());
  ledger.push_back({tb::message_record::make(2, 2000, "t", "x"), 0});
  ledger.push_back({tb::message_record::make(3, 3000, "t", "x"), 0});
  EXPECT_EQ(ledger.oldest_pending_accepted(), 2000);
  ledger.delay({tb::message_record::make(1, 1000, "t", "x"), 1},
               tb::group_ledger::time_point{} + 5s);
  EXPECT_EQ(ledger.oldest_pending_accepted(), 1000);
}

// -- actors -------------------------------------------------------------------

class ActorStats : public group_test {
protected:
  /// Asks the router for its Stats view.
  tb::router_view view(std::string pattern = {}, uint32_t limit = 100) {
    return query<tb::router_view>(router, tb::stats_atom_v,
                                  tb::stats_query{std::move(pattern), limit});
  }

  test_session pub = spawn_session();
  test_session a = spawn_session();
};

TEST_F(ActorStats, GroupMembersReportCreditAnswersAndTheirOldestDelivery) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>", 3);
  publish(pub, "jobs.a", 5);
  auto got = ids_of(a.sink->deliveries());
  ASSERT_EQ(got.size(), 3u);
  pass(300ms);
  ack(a, {got[0]});
  nack(a, {got[1]}, 60000);
  ASSERT_EQ(a.sink->deliveries().size(), 5u);
  reject(a, {got[2]});
  auto info = query<tb::group_info>(group("work"), tb::stats_atom_v);
  ASSERT_EQ(info.members.size(), 1u);
  auto& m = info.members[0];
  EXPECT_EQ(m.subscription_id, 1u);
  EXPECT_EQ(m.max_in_flight, 3u);
  EXPECT_EQ(m.in_flight, 2u);
  EXPECT_EQ(m.acks, 1u);
  EXPECT_EQ(m.nacks, 1u);
  EXPECT_EQ(m.rejects, 1u);
  EXPECT_TRUE(m.active);
  EXPECT_EQ(m.oldest_in_flight_age_ms, 0u) << "its two deliveries are new";
  pass(400ms);
  info = query<tb::group_info>(group("work"), tb::stats_atom_v);
  EXPECT_EQ(info.members[0].oldest_in_flight_age_ms, 400u);
  EXPECT_EQ(info.counters.pending, 1u) << "the nacked one, delayed";
  EXPECT_EQ(info.mailbox, 0u);
}

TEST_F(ActorStats, GroupRatesCountTheLastFullSecond) {
  create_group("work", group_settings("jobs.>"));
  join(a, 1, "work", "jobs.>", 100);
  publish(pub, "jobs.a", 4);
  ack(a, ids_of(a.sink->deliveries()));
  pass(1s);
  auto c = counters("work");
  EXPECT_EQ(c.received_per_second_1s, 4.0);
  EXPECT_EQ(c.received_per_second_10s, 0.4);
  EXPECT_EQ(c.acked_per_second_1s, 4.0);
  pass(2s);
  c = counters("work");
  EXPECT_EQ(c.received_per_second_1s, 0.0);
  EXPECT_EQ(c.received_per_second_10s, 0.4);
}

TEST_F(ActorStats, SessionsCountRefusalsAndDeliveryLatencies) {
  subscribe(a, 1, "t.>");
  publish(pub, "t.1", 3);
  publish(pub, "bad..topic", 1);
  auto s = stats(a);
  EXPECT_EQ(s.delivery_latency.count, 3u);
  EXPECT_EQ(s.delivered, 3u);
  EXPECT_EQ(stats(pub).refused, 1u);
  EXPECT_EQ(stats(pub).delivery_latency.count, 0u);
}

TEST_F(ActorStats, AnEndedSessionHandsItsCountsToTheRouter) {
  subscribe(a, 1, "t");
  publish(pub, "t", 3);
  self->send_exit(pub.hdl, caf::exit_reason::user_shutdown);
  self->send_exit(a.hdl, caf::exit_reason::user_shutdown);
  run();
  auto ended = view().ended_sessions;
  EXPECT_EQ(ended.published, 3u);
  EXPECT_EQ(ended.delivered, 3u);
  EXPECT_EQ(ended.delivery_latency.count, 3u);
  EXPECT_EQ(ended.buffered, 0u);
}

TEST_F(ActorStats, TheShardsListMatchingTopicsSortedAndCut) {
  for (auto topic : {"a.3", "a.1", "b.1", "a.2"})
    publish(pub, topic);
  auto v = view("a.*", 2);
  ASSERT_EQ(v.shards.size(), 4u);
  uint64_t matched = 0;
  uint64_t live = 0;
  std::vector<std::string> names;
  for (auto& shard : v.shards) {
    auto s = query<tb::shard_view>(shard, tb::stats_atom_v,
                                   tb::stats_query{"a.*", 2});
    matched += s.matched;
    live += s.live;
    ASSERT_LE(s.topics.size(), 2u);
    for (size_t i = 1; i < s.topics.size(); ++i)
      EXPECT_LT(s.topics[i - 1].name, s.topics[i].name);
    for (auto& t : s.topics)
      names.push_back(t.name);
    auto none =
        query<tb::shard_view>(shard, tb::stats_atom_v, tb::stats_query{"", 2});
    EXPECT_TRUE(none.topics.empty()) << "no pattern, no topic listed";
  }
  EXPECT_EQ(matched, 3u);
  EXPECT_EQ(live, 4u);
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "a.1");
  EXPECT_EQ(names[1], "a.2");
}

TEST_F(ActorStats, TheRouterRefusesABadTopicPattern) {
  auto response = self->request(router, caf::infinite, tb::stats_atom_v,
                                tb::stats_query{"a..b", 10});
  run();
  response.receive([](tb::router_view&) { FAIL() << "expected an error"; },
                   [](caf::error& err) {
                     auto info = tb::to_error_info(err);
                     EXPECT_EQ(info.code, tb::ec::invalid_pattern);
                     EXPECT_NE(info.text.find("topic_pattern"),
                               std::string::npos);
                   });
}

TEST_F(ActorStats, ExtensionActorsAreListedUntilTheyExit) {
  auto tap = sys.spawn([]() -> tb::observable_actor::behavior_type {
    return {[](tb::stats_atom) {
      return tb::actor_stats{"audit-tap", "orders", 0};
    }};
  });
  self->send(router, tb::observe_atom_v, tap);
  run();
  auto v = view();
  ASSERT_EQ(v.extensions.size(), 1u);
  auto s = query<tb::actor_stats>(v.extensions[0], tb::stats_atom_v);
  EXPECT_EQ(s.kind, "audit-tap");
  self->send_exit(tap, caf::exit_reason::user_shutdown);
  run();
  EXPECT_TRUE(view().extensions.empty());
}

} // namespace
} // namespace tb::test
