// What `tinybroker-cli stats` makes of hand-built Stats replies: latency
// percentiles from cumulative buckets, rates between two replies, the
// --watch order of groups, the text view and the JSON object.

#include <chrono>
#include <sstream>
#include <string>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "tools/cli/stats_view.hpp"

namespace tb::cli {
namespace {

namespace pb = tinybroker::v1;

// Returns a histogram with `bounds`, cumulative `counts` and `total`.
pb::LatencyHistogram histogram(std::vector<double> bounds,
                               std::vector<uint64_t> counts, uint64_t total) {
  pb::LatencyHistogram h;
  for (auto b : bounds)
    h.add_upper_bounds_seconds(b);
  for (auto c : counts)
    h.add_cumulative_counts(c);
  h.set_count(total);
  return h;
}

TEST(EstimateQuantile, InterpolatesWithinTheBucketHoldingTheRank) {
  auto h = histogram({0.001, 0.01, 0.1}, {50, 90, 100}, 100);
  EXPECT_DOUBLE_EQ(estimate_quantile(h, 0.5)->seconds, 0.001);
  EXPECT_DOUBLE_EQ(estimate_quantile(h, 0.25)->seconds, 0.0005);
  EXPECT_DOUBLE_EQ(estimate_quantile(h, 0.7)->seconds, 0.0055);
  EXPECT_DOUBLE_EQ(estimate_quantile(h, 0.99)->seconds, 0.091);
  EXPECT_FALSE(estimate_quantile(h, 0.99)->beyond_last_bound);
  EXPECT_EQ(format_quantile(estimate_quantile(h, 0.5)), "1.00ms");
}

TEST(EstimateQuantile, SkipsEmptyBucketsAndSaysWhenBeyondTheLastBound) {
  auto h = histogram({0.001, 0.002, 0.004}, {0, 0, 10}, 10);
  EXPECT_DOUBLE_EQ(estimate_quantile(h, 0.5)->seconds, 0.003);
  // 90 of 100 deliveries took longer than the last bound.
  auto slow = histogram({0.001, 0.5}, {5, 10}, 100);
  auto p50 = estimate_quantile(slow, 0.5);
  ASSERT_TRUE(p50.has_value());
  EXPECT_TRUE(p50->beyond_last_bound);
  EXPECT_DOUBLE_EQ(p50->seconds, 0.5);
  EXPECT_EQ(format_quantile(p50), ">500.00ms");
}

TEST(EstimateQuantile, NothingWithoutDeliveriesOrBuckets) {
  EXPECT_FALSE(estimate_quantile(histogram({0.001}, {0}, 0), 0.5));
  EXPECT_FALSE(estimate_quantile(histogram({}, {}, 5), 0.5));
  EXPECT_EQ(format_quantile(std::nullopt), "-");
}

// Returns a sample with the given broker counters, taken at `at`.
stats_sample make_sample(uint64_t uptime_ms, uint64_t published,
                         uint64_t delivered, uint64_t dropped,
                         std::chrono::steady_clock::time_point at = {}) {
  stats_sample s;
  auto& b = *s.reply.mutable_broker();
  b.set_uptime_ms(uptime_ms);
  b.set_published(published);
  b.set_delivered(delivered);
  b.set_dropped(dropped);
  s.at = at;
  return s;
}

TEST(RatesBetween, DividesTheDifferencesByTheBrokersElapsedTime) {
  auto rates = rates_between(make_sample(1000, 100, 200, 0),
                             make_sample(3000, 300, 600, 10));
  ASSERT_TRUE(rates.has_value());
  EXPECT_DOUBLE_EQ(rates->published, 100);
  EXPECT_DOUBLE_EQ(rates->delivered, 200);
  EXPECT_DOUBLE_EQ(rates->dropped, 5);
}

TEST(RatesBetween, UsesTheLocalClockWhenTheUptimeDidNotMove) {
  std::chrono::steady_clock::time_point t0{};
  auto rates = rates_between(
      make_sample(0, 0, 0, 0, t0),
      make_sample(0, 50, 0, 0, t0 + std::chrono::milliseconds(500)));
  ASSERT_TRUE(rates.has_value());
  EXPECT_DOUBLE_EQ(rates->published, 100);
  EXPECT_FALSE(
      rates_between(make_sample(0, 0, 0, 0, t0), make_sample(0, 5, 0, 0, t0)));
}

TEST(RatesBetween, NothingAcrossARestart) {
  EXPECT_FALSE(
      rates_between(make_sample(5000, 100, 0, 0), make_sample(1000, 10, 0, 0)));
  EXPECT_FALSE(
      rates_between(make_sample(1000, 100, 0, 0), make_sample(2000, 10, 0, 0)));
}

// Adds group `name` with the given counters to `reply`.
pb::GroupCounters& add_group(pb::StatsReply& reply, const std::string& name,
                             uint64_t pending = 0, uint64_t in_flight = 0,
                             uint64_t oldest_ms = 0) {
  auto& g = *reply.add_groups();
  g.set_name(name);
  g.mutable_settings()->set_pattern(name + ".>");
  g.mutable_counters()->set_pending(pending);
  g.mutable_counters()->set_in_flight(in_flight);
  g.mutable_counters()->set_oldest_pending_age_ms(oldest_ms);
  return *g.mutable_counters();
}

TEST(FillMissingGroupRates, PrefersTheBrokersRatesAndFillsOnlyMissingOnes) {
  auto earlier = make_sample(1000, 0, 0, 0);
  add_group(earlier.reply, "computed").set_received(10);
  earlier.reply.mutable_groups(0)->mutable_counters()->set_acked(4);
  add_group(earlier.reply, "reported").set_received(10);
  auto later = make_sample(3000, 0, 0, 0);
  auto& computed = add_group(later.reply, "computed");
  computed.set_received(30);
  computed.set_acked(8);
  auto& reported = add_group(later.reply, "reported");
  reported.set_received(30);
  reported.set_received_per_second_10s(7);
  add_group(later.reply, "new").set_received(50);
  fill_missing_group_rates(earlier, later);
  auto& groups = later.reply.groups();
  EXPECT_DOUBLE_EQ(groups[0].counters().received_per_second_1s(), 10);
  EXPECT_DOUBLE_EQ(groups[0].counters().acked_per_second_1s(), 2);
  EXPECT_DOUBLE_EQ(groups[1].counters().received_per_second_1s(), 0);
  EXPECT_DOUBLE_EQ(groups[1].counters().received_per_second_10s(), 7);
  EXPECT_DOUBLE_EQ(groups[2].counters().received_per_second_1s(), 0);
}

TEST(ByBacklog, PendingThenInFlightThenOldestAgeThenName) {
  pb::StatsReply reply;
  add_group(reply, "f");
  add_group(reply, "a", 5);
  add_group(reply, "b", 10);
  add_group(reply, "c", 10, 3);
  add_group(reply, "e");
  add_group(reply, "d", 10, 3, 500);
  std::string order;
  for (auto* g : by_backlog(reply))
    order += g->name();
  EXPECT_EQ(order, "dcbaef");
}

// Returns a reply with totals, two of three groups (one member), a topic,
// a session and two actors.
pb::StatsReply full_reply() {
  pb::StatsReply reply;
  auto& b = *reply.mutable_broker();
  b.set_version("0.1.0");
  b.set_uptime_ms(303000);
  b.set_published(1200);
  b.set_delivered(2400);
  b.set_rss_bytes(47395635);
  b.set_sessions(4);
  *b.mutable_delivery_latency() = histogram({0.001, 0.01}, {1200, 2400}, 2400);
  add_group(reply, "quiet");
  add_group(reply, "busy", 40, 3);
  auto& m = *reply.mutable_groups(1)->add_members();
  m.set_peer("ipv4:127.0.0.1:50001");
  m.set_active(true);
  reply.set_groups_matched(3);
  auto& t = *reply.add_topics();
  t.set_name("orders.eu");
  t.set_destinations(2);
  reply.set_topics_matched(1);
  reply.add_sessions()->set_peer("ipv4:127.0.0.1:50001");
  reply.set_sessions_matched(1);
  auto& small = *reply.add_actors();
  small.set_kind("topic");
  small.set_mailbox(1);
  auto& big = *reply.add_actors();
  big.set_kind("router");
  big.set_mailbox(9);
  return reply;
}

TEST(PrintStats, OneShotShowsTotalsGroupsAndWhatWasAskedFor) {
  stats_view view;
  view.server = "127.0.0.1:7400";
  std::ostringstream plain;
  print_stats(plain, full_reply(), view);
  auto text = plain.str();
  EXPECT_EQ(text.substr(0, text.find("\n\n")),
            "tinybroker 0.1.0 at 127.0.0.1:7400, up 5m03s\n"
            "messages  published 1200, unrouted 0, delivered 2400, dropped 0, "
            "refused 0\n"
            "clients   sessions 4, subscriptions 0, topics 0, groups 0\n"
            "memory    rss 45.2MiB, held 0B, buffered 0 deliveries\n"
            "latency   p50 1.00ms, p99 9.82ms over 2400 deliveries");
  EXPECT_LT(text.find("quiet"), text.find("busy")) << text; // reply order
  EXPECT_NE(text.find("(showing 2 of 3 groups; see --limit)"),
            std::string::npos)
      << text;
  for (auto* hidden : {"SUBSCRIPTION", "TOPIC", "PEER", "MAILBOX", "rates"})
    EXPECT_EQ(text.find(hidden), std::string::npos) << hidden << '\n' << text;

  view.members = view.topics = view.sessions = view.actors = true;
  std::ostringstream all;
  print_stats(all, full_reply(), view);
  text = all.str();
  for (auto* shown : {"SUBSCRIPTION", "ipv4:127.0.0.1:50001", "orders.eu",
                      "BUFFERED_BYTES", "MAILBOX"})
    EXPECT_NE(text.find(shown), std::string::npos) << shown << '\n' << text;
  EXPECT_LT(text.find("router"), text.find("topic  ")) << text;
  // The sessions table starts with each client's chosen name ("-": none).
  EXPECT_NE(text.find("\nNAME  PEER                  PUBLISHED"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n-     ipv4:127.0.0.1:50001"), std::string::npos)
      << text;
  auto named = full_reply();
  named.mutable_sessions(0)->set_client_name("billing-7");
  std::ostringstream with_name;
  print_stats(with_name, named, view);
  EXPECT_NE(with_name.str().find("\nbilling-7  ipv4:127.0.0.1:50001"),
            std::string::npos)
      << with_name.str();
}

TEST(PrintStats, WatchBlockHasRatesGroupsByBacklogAndNoBlankLine) {
  stats_view view;
  view.server = "127.0.0.1:7400";
  view.watch = true;
  view.members = view.actors = true;
  std::ostringstream first;
  print_stats(first, full_reply(), view);
  auto text = first.str();
  EXPECT_NE(text.find("rates     published/s -, delivered/s -, dropped/s -\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("\n\n"), std::string::npos) << text;
  EXPECT_LT(text.find("busy"), text.find("quiet")) << text;
  std::ostringstream later;
  print_stats(later, full_reply(), view, broker_rates{120, 240.4, 0});
  EXPECT_NE(later.str().find("published/s 120, delivered/s 240, dropped/s 0"),
            std::string::npos)
      << later.str();
}

// The request columns appear once a session used request/reply, with each
// session's counters; without requests the table is as before.
TEST(PrintStats, SessionsTableShowsRequestCountersWhenUsed) {
  stats_view view;
  view.sessions = true;
  std::ostringstream quiet;
  print_stats(quiet, full_reply(), view);
  EXPECT_EQ(quiet.str().find("REQUESTS"), std::string::npos) << quiet.str();
  auto reply = full_reply();
  auto& s = *reply.mutable_sessions(0);
  s.set_requests(7);
  s.set_replies(5);
  s.set_no_responders(1);
  s.set_request_timeouts(1);
  s.set_late_replies(3);
  std::ostringstream used;
  print_stats(used, reply, view);
  auto text = used.str();
  EXPECT_NE(text.find("BUFFERED_BYTES  REQUESTS  REPLIES  NO_RESPONDERS  "
                      "TIMEOUTS  LATE_REPLIES  CONNECTED"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("0B         7        5              1         1  "
                      "           3        0ms"),
            std::string::npos)
      << text;
}

TEST(StatsJson, SessionEntriesHoldTheirRequestCounters) {
  auto reply = full_reply();
  auto& s = *reply.mutable_sessions(0);
  s.set_requests(7);
  s.set_replies(5);
  s.set_no_responders(1);
  s.set_request_timeouts(2);
  s.set_late_replies(3);
  google::protobuf::Struct parsed;
  auto json = stats_json(reply);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok())
      << json;
  auto& session = parsed.fields()
                      .at("sessions")
                      .list_value()
                      .values(0)
                      .struct_value()
                      .fields();
  EXPECT_EQ(session.at("requests").number_value(), 7);
  EXPECT_EQ(session.at("replies").number_value(), 5);
  EXPECT_EQ(session.at("no_responders").number_value(), 1);
  EXPECT_EQ(session.at("request_timeouts").number_value(), 2);
  EXPECT_EQ(session.at("late_replies").number_value(), 3);
}

TEST(StatsJson, HoldsTheWholeReplyWithNumbersAsNumbers) {
  auto json = stats_json(full_reply());
  EXPECT_EQ(json.find('\n'), std::string::npos);
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok())
      << json;
  auto& f = parsed.fields();
  auto& broker = f.at("broker").struct_value().fields();
  EXPECT_EQ(broker.at("published").number_value(), 1200);
  EXPECT_EQ(broker.at("version").string_value(), "0.1.0");
  auto& latency = broker.at("delivery_latency").struct_value().fields();
  EXPECT_EQ(
      latency.at("upper_bounds_seconds").list_value().values(1).number_value(),
      0.01);
  EXPECT_EQ(
      latency.at("cumulative_counts").list_value().values(1).number_value(),
      2400);
  EXPECT_EQ(f.at("groups_matched").number_value(), 3);
  auto& busy = f.at("groups").list_value().values(1).struct_value().fields();
  EXPECT_EQ(busy.at("name").string_value(), "busy");
  EXPECT_EQ(busy.at("members").list_value().values_size(), 1);
  EXPECT_EQ(f.at("topics")
                .list_value()
                .values(0)
                .struct_value()
                .fields()
                .at("destinations")
                .number_value(),
            2);
  EXPECT_EQ(f.at("sessions").list_value().values_size(), 1);
  EXPECT_EQ(f.at("actors").list_value().values_size(), 2);
}

} // namespace
} // namespace tb::cli
