// Tests of the Prometheus text rendering of a Stats reply: names, types,
// labels and their escaping, the latency histogram, per-topic series only
// when enabled, and what the official parser reads from the text.

#include "net/metrics_format.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "prometheus_parse.hpp"

namespace {

namespace pb = tinybroker::v1;
using tb::metrics_options;
using tb::render_metrics;

// Returns true if `text` has `line` as a whole line.
bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

// A reply with distinct broker counters, two groups and two topics.
pb::StatsReply sample_reply() {
  pb::StatsReply reply;
  auto& b = *reply.mutable_broker();
  b.set_published(11);
  b.set_unrouted(2);
  b.set_delivered(13);
  b.set_dropped(3);
  b.set_refused(4);
  b.set_unauthenticated(41);
  b.set_permission_denied(42);
  b.set_requests(51);
  b.set_replies(52);
  b.set_no_responders(53);
  b.set_request_timeouts(54);
  b.set_late_replies(55);
  b.set_pending_requests(56);
  b.set_duplicates(43);
  b.set_dedup_ids(44);
  b.set_dedup_evicted(45);
  b.set_sessions(5);
  b.set_topics(6);
  b.set_subscriptions(7);
  b.set_groups(2);
  b.set_version("0.1.0");
  b.set_uptime_ms(1500);
  b.set_rss_bytes(1u << 20);
  b.set_held_bytes(4096);
  b.set_buffered(9);
  b.set_fanout_scheduled(21);
  b.set_fanout_delayed_delivered(22);
  b.set_fanout_scheduled_refused(23);
  b.set_fanout_expired(24);
  auto& h = *b.mutable_delivery_latency();
  for (auto [bound, n] : {std::pair{0.001, 2}, {0.01, 5}, {0.1, 7}}) {
    h.add_upper_bounds_seconds(bound);
    h.add_cumulative_counts(n);
  }
  h.set_count(9);
  h.set_sum_seconds(0.25);
  for (auto name : {"billing", "workers"}) {
    auto& g = *reply.add_groups();
    g.set_name(name);
    auto& c = *g.mutable_counters();
    auto base = name == std::string{"billing"} ? 100u : 200u;
    c.set_pending(base + 1);
    c.set_in_flight(base + 2);
    c.set_members(base + 3);
    c.set_received(base + 4);
    c.set_delivered(base + 5);
    c.set_acked(base + 6);
    c.set_redelivered(base + 7);
    c.set_dead_lettered(base + 8);
    c.set_dropped(base + 9);
    c.set_refused(base + 10);
    c.set_expired_ttl(base + 20);
    c.set_scheduled(base + 21);
    c.set_next_due_unix_ms(1'700'000'000'500);
    c.set_held_bytes(base + 11);
    c.set_oldest_pending_age_ms(2500);
  }
  for (auto name : {"orders.eu", "odd\"name\\x"}) {
    auto& t = *reply.add_topics();
    t.set_name(name);
    t.set_destinations(3);
    t.set_publishers(1);
  }
  return reply;
}

TEST(metrics_format, broker_metrics_have_help_type_and_value) {
  auto text = render_metrics(sample_reply(), {});
  struct want {
    const char* name;
    const char* type;
    const char* value;
  };
  const want wants[] = {
      {"tinybroker_messages_published_total", "counter", "11"},
      {"tinybroker_messages_unrouted_total", "counter", "2"},
      {"tinybroker_deliveries_total", "counter", "13"},
      {"tinybroker_messages_dropped_total", "counter", "3"},
      {"tinybroker_refusals_total", "counter", "4"},
      {"tinybroker_unauthenticated_total", "counter", "41"},
      {"tinybroker_permission_denied_total", "counter", "42"},
      {"tinybroker_requests_total", "counter", "51"},
      {"tinybroker_replies_total", "counter", "52"},
      {"tinybroker_requests_no_responders_total", "counter", "53"},
      {"tinybroker_requests_timed_out_total", "counter", "54"},
      {"tinybroker_late_replies_total", "counter", "55"},
      {"tinybroker_pending_requests", "gauge", "56"},
      {"tinybroker_duplicates_total", "counter", "43"},
      {"tinybroker_dedup_ids", "gauge", "44"},
      {"tinybroker_dedup_evicted_total", "counter", "45"},
      {"tinybroker_sessions", "gauge", "5"},
      {"tinybroker_topics", "gauge", "6"},
      {"tinybroker_subscriptions", "gauge", "7"},
      {"tinybroker_groups", "gauge", "2"},
      {"tinybroker_uptime_seconds", "gauge", "1.5"},
      {"tinybroker_resident_memory_bytes", "gauge", "1048576"},
      {"tinybroker_held_bytes", "gauge", "4096"},
      {"tinybroker_buffered_deliveries", "gauge", "9"},
      {"tinybroker_fanout_scheduled", "gauge", "21"},
      {"tinybroker_fanout_delayed_delivered_total", "counter", "22"},
      {"tinybroker_fanout_scheduled_refused_total", "counter", "23"},
      {"tinybroker_fanout_expired_total", "counter", "24"},
  };
  for (const auto& w : wants) {
    auto name = std::string{w.name};
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
    EXPECT_TRUE(has_line(text, "# TYPE " + name + " " + w.type)) << text;
    EXPECT_TRUE(has_line(text, name + " " + w.value)) << text;
  }
  EXPECT_TRUE(has_line(text, "# TYPE tinybroker_build_info gauge")) << text;
  EXPECT_TRUE(has_line(text, "tinybroker_build_info{version=\"0.1.0\"} 1"))
      << text;
}

TEST(metrics_format, every_family_has_one_help_and_one_type_before_samples) {
  metrics_options all;
  all.per_topic = true;
  std::istringstream lines{render_metrics(sample_reply(), all)};
  std::set<std::string> helped, typed;
  std::string line, family;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(helped.insert(family).second) << "two HELP for " << family;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      EXPECT_EQ(line.substr(7, line.find(' ', 7) - 7), family) << line;
      EXPECT_TRUE(typed.insert(family).second) << "two TYPE for " << family;
    } else {
      // A sample belongs to the family announced last (a histogram's
      // samples add _bucket, _sum and _count to its name).
      auto name = line.substr(0, line.find_first_of("{ "));
      EXPECT_EQ(name.rfind(family, 0), 0u) << line << " after " << family;
    }
  }
  EXPECT_EQ(helped, typed);
  EXPECT_EQ(helped.size(),
            16u + 4u + 6u + 3u + 1u + 17u + 2u); // broker (+4 of issue 29's
                                                 // fan-out, +6 requests,
                                                 // +3 dedup), histogram,
                                                 // groups, auth
}

TEST(metrics_format, latency_histogram_is_cumulative_with_inf_sum_and_count) {
  auto text = render_metrics(sample_reply(), {});
  auto block = "# TYPE tinybroker_delivery_latency_seconds histogram\n"
               "tinybroker_delivery_latency_seconds_bucket{le=\"0.001\"} 2\n"
               "tinybroker_delivery_latency_seconds_bucket{le=\"0.01\"} 5\n"
               "tinybroker_delivery_latency_seconds_bucket{le=\"0.1\"} 7\n"
               "tinybroker_delivery_latency_seconds_bucket{le=\"+Inf\"} 9\n"
               "tinybroker_delivery_latency_seconds_sum 0.25\n"
               "tinybroker_delivery_latency_seconds_count 9\n";
  EXPECT_NE(text.find(block), std::string::npos) << text;
}

TEST(metrics_format, an_empty_histogram_still_has_inf_sum_and_count) {
  auto text = render_metrics(pb::StatsReply{}, {});
  auto block = "tinybroker_delivery_latency_seconds_bucket{le=\"+Inf\"} 0\n"
               "tinybroker_delivery_latency_seconds_sum 0\n"
               "tinybroker_delivery_latency_seconds_count 0\n";
  EXPECT_NE(text.find(block), std::string::npos) << text;
}

TEST(metrics_format, group_series_carry_the_group_label_per_family) {
  auto text = render_metrics(sample_reply(), {});
  EXPECT_NE(text.find("# TYPE tinybroker_group_pending_messages gauge\n"
                      "tinybroker_group_pending_messages{group=\"billing\"} "
                      "101\n"
                      "tinybroker_group_pending_messages{group=\"workers\"} "
                      "201\n"),
            std::string::npos)
      << text;
  const std::pair<const char*, const char*> families[] = {
      {"tinybroker_group_in_flight{group=\"workers\"} 202", "gauge"},
      {"tinybroker_group_members{group=\"workers\"} 203", "gauge"},
      {"tinybroker_group_received_total{group=\"workers\"} 204", "counter"},
      {"tinybroker_group_delivered_total{group=\"workers\"} 205", "counter"},
      {"tinybroker_group_acked_total{group=\"workers\"} 206", "counter"},
      {"tinybroker_group_redelivered_total{group=\"workers\"} 207", "counter"},
      {"tinybroker_group_dead_lettered_total{group=\"workers\"} 208",
       "counter"},
      {"tinybroker_group_dropped_total{group=\"workers\"} 209", "counter"},
      {"tinybroker_group_refused_total{group=\"workers\"} 210", "counter"},
      {"tinybroker_group_expired_ttl_total{group=\"workers\"} 220", "counter"},
      {"tinybroker_group_scheduled_messages{group=\"workers\"} 221", "gauge"},
      {"tinybroker_group_next_due_timestamp_seconds{group=\"workers\"} "
       "1.7000000005e+09",
       "gauge"},
      {"tinybroker_group_held_bytes{group=\"workers\"} 211", "gauge"},
      {"tinybroker_group_oldest_pending_age_seconds{group=\"workers\"} 2.5",
       "gauge"},
  };
  for (auto [sample, type] : families) {
    EXPECT_TRUE(has_line(text, sample)) << sample << "\n" << text;
    auto name = std::string{sample}.substr(0, std::string{sample}.find('{'));
    EXPECT_TRUE(has_line(text, "# TYPE " + name + " " + type)) << name;
  }
}

TEST(metrics_format, no_group_families_without_groups) {
  auto reply = sample_reply();
  reply.clear_groups();
  EXPECT_EQ(render_metrics(reply, {}).find("tinybroker_group_"),
            std::string::npos);
}

TEST(metrics_format, per_topic_series_are_off_by_default) {
  metrics_options defaults;
  EXPECT_FALSE(defaults.per_topic);
  auto text = render_metrics(sample_reply(), defaults);
  EXPECT_EQ(text.find("tinybroker_topic_"), std::string::npos) << text;
  auto request = tb::metrics_stats_request(defaults);
  EXPECT_EQ(request.topic_pattern(), ""); // the collector skips topics
  EXPECT_EQ(request.limit(), 10000u);
  EXPECT_EQ(request.group_filter(), "");
}

TEST(metrics_format, per_topic_series_when_enabled_with_escaped_labels) {
  metrics_options per_topic;
  per_topic.per_topic = true;
  auto text = render_metrics(sample_reply(), per_topic);
  EXPECT_TRUE(has_line(text, "# TYPE tinybroker_topic_destinations gauge"));
  EXPECT_TRUE(has_line(text, "# TYPE tinybroker_topic_publishers gauge"));
  EXPECT_TRUE(
      has_line(text, "tinybroker_topic_destinations{topic=\"orders.eu\"} 3"))
      << text;
  EXPECT_TRUE(has_line(
      text, "tinybroker_topic_publishers{topic=\"odd\\\"name\\\\x\"} 1"))
      << text;
  auto request = tb::metrics_stats_request(per_topic);
  EXPECT_EQ(request.topic_pattern(), ">");
  EXPECT_EQ(request.limit(), 10000u);
}

TEST(metrics_format, label_values_escape_backslash_quote_and_newline) {
  EXPECT_EQ(tb::escape_label_value("plain-name_1"), "plain-name_1");
  EXPECT_EQ(tb::escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(tb::escape_label_value("été"), "été"); // UTF-8 stays as is
  pb::StatsReply reply;
  reply.add_groups()->set_name("q\"g");
  EXPECT_NE(render_metrics(reply, {}).find("{group=\"q\\\"g\"} "),
            std::string::npos);
}

TEST(metrics_format, numbers_read_back_exactly) {
  using tb::format_metric_value;
  EXPECT_EQ(format_metric_value(0.5), "0.5");
  EXPECT_EQ(format_metric_value(1.0), "1");
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(2.5e-05), "2.5e-05");
  EXPECT_EQ(format_metric_value(0.0001), "0.0001"); // as Go writes `le`
  EXPECT_EQ(format_metric_value(0.00025), "0.00025");
  EXPECT_EQ(format_metric_value(100.0), "100");
  EXPECT_EQ(format_metric_value(123456.5), "123456.5");
  EXPECT_EQ(format_metric_value(1234567.0), "1.234567e+06");
  EXPECT_EQ(format_metric_value(0.0), "0");
  EXPECT_EQ(format_metric_value(-0.5), "-0.5");
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::infinity()),
            "+Inf");
  EXPECT_EQ(format_metric_value(-std::numeric_limits<double>::infinity()),
            "-Inf");
  EXPECT_EQ(format_metric_value(std::nan("")), "NaN");
  pb::StatsReply reply;
  reply.mutable_broker()->set_published(18446744073709551615ull);
  EXPECT_TRUE(has_line(render_metrics(reply, {}),
                       "tinybroker_messages_published_total "
                       "18446744073709551615"));
}

TEST(metrics_format, the_official_parser_reads_the_rendered_text) {
  metrics_options per_topic;
  per_topic.per_topic = true;
  auto parsed = tb::test::parse_with_prometheus_client(
      render_metrics(sample_reply(), per_topic));
  ASSERT_TRUE(parsed.ok) << parsed.output;
  EXPECT_EQ(parsed.types["tinybroker_messages_published"], "counter");
  EXPECT_EQ(parsed.types["tinybroker_sessions"], "gauge");
  EXPECT_EQ(parsed.types["tinybroker_delivery_latency_seconds"], "histogram");
  EXPECT_EQ(parsed.types["tinybroker_group_acked"], "counter");
  EXPECT_EQ(parsed.value("tinybroker_messages_published_total"), 11.0);
  EXPECT_EQ(parsed.value("tinybroker_uptime_seconds"), 1.5);
  EXPECT_EQ(parsed.value("tinybroker_build_info", R"({"version":"0.1.0"})"),
            1.0);
  EXPECT_EQ(parsed.value("tinybroker_delivery_latency_seconds_bucket",
                         R"({"le":"+Inf"})"),
            9.0);
  EXPECT_EQ(parsed.count("tinybroker_delivery_latency_seconds_bucket"), 4u);
  EXPECT_EQ(
      parsed.value("tinybroker_group_acked_total", R"({"group":"workers"})"),
      206.0);
  EXPECT_EQ(parsed.count("tinybroker_group_acked_total"), 2u);
  // The escaped label reads back as the topic's own name.
  EXPECT_EQ(parsed.value("tinybroker_topic_destinations",
                         R"({"topic":"odd\"name\\x"})"),
            3.0)
      << parsed.output;
}

TEST(metrics_format, tls_expiry_is_a_gauge_the_official_parser_reads) {
  EXPECT_EQ(tb::render_tls_expiry(0), "");
  auto text =
      render_metrics(sample_reply(), {}) + tb::render_tls_expiry(1797289668);
  EXPECT_TRUE(has_line(
      text, "tinybroker_tls_certificate_expiry_timestamp_seconds 1797289668"));
  auto parsed = tb::test::parse_with_prometheus_client(text);
  ASSERT_TRUE(parsed.ok) << parsed.output;
  EXPECT_EQ(parsed.types["tinybroker_tls_certificate_expiry_timestamp_seconds"],
            "gauge");
  EXPECT_EQ(parsed.value("tinybroker_tls_certificate_expiry_timestamp_seconds"),
            1797289668.0);
}

} // namespace

namespace {

TEST(metrics_format, cluster_replica_counters_are_rendered) {
  pb::ClusterStats c;
  c.set_node_name("n1");
  c.set_promotions(2);
  c.set_replicas_held(5);
  c.set_stale_entries_refused(3);
  auto text = tb::render_cluster_metrics(c);
  EXPECT_NE(text.find("# TYPE tinybroker_cluster_promotions_total counter\n"
                      "tinybroker_cluster_promotions_total 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE tinybroker_cluster_replicas_held gauge\n"
                      "tinybroker_cluster_replicas_held 5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tinybroker_cluster_stale_entries_refused_total 3\n"),
            std::string::npos)
      << text;
}

TEST(metrics_format, cluster_membership_rejoin_counters_are_rendered) {
  pb::ClusterStats c;
  c.set_node_name("n1");
  c.set_memberships_lost(4);
  c.set_memberships_rejoined(3);
  c.set_memberships_ended(1);
  auto text = tb::render_cluster_metrics(c);
  EXPECT_NE(text.find("# TYPE tinybroker_cluster_memberships_lost_total "
                      "counter\ntinybroker_cluster_memberships_lost_total 4\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tinybroker_cluster_memberships_rejoined_total 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tinybroker_cluster_memberships_ended_total 1\n"),
            std::string::npos)
      << text;
}

} // namespace
