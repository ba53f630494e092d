#include "net/metrics_format.hpp"
#include "net/metrics_lines.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace tb {

namespace pb = tinybroker::v1;
using namespace metrics_lines;

namespace {

// -- the metric tables --------------------------------------------------------

// A broker-wide metric: name, type, help and how to read it.
struct broker_metric {
  std::string_view name;
  std::string_view type;
  std::string_view help;
  std::string (*value)(const pb::BrokerCounters&);
};

const broker_metric broker_metrics[] = {
    {"tinybroker_messages_published_total", "counter",
     "Messages the broker accepted from publishers.",
     [](const pb::BrokerCounters& b) {
       return count(b.published());
     }},
    {"tinybroker_messages_unrouted_total", "counter",
     "Accepted messages that matched no subscription or group.",
     [](const pb::BrokerCounters& b) {
       return count(b.unrouted());
     }},
    {"tinybroker_deliveries_total", "counter",
     "Fan-out and group deliveries written to clients.",
     [](const pb::BrokerCounters& b) {
       return count(b.delivered());
     }},
    {"tinybroker_messages_dropped_total", "counter",
     "Fan-out messages lost by subscribers that read too slowly.",
     [](const pb::BrokerCounters& b) {
       return count(b.dropped());
     }},
    {"tinybroker_refusals_total", "counter",
     "Requests and messages refused with an error.",
     [](const pb::BrokerCounters& b) {
       return count(b.refused());
     }},
    {"tinybroker_unauthenticated_total", "counter",
     "Calls and streams refused for a missing or wrong token.",
     [](const pb::BrokerCounters& b) {
       return count(b.unauthenticated());
     }},
    {"tinybroker_permission_denied_total", "counter",
     "Publishes, subscribes, joins and admin calls a token may not make.",
     [](const pb::BrokerCounters& b) {
       return count(b.permission_denied());
     }},
    {"tinybroker_requests_total", "counter",
     "Requests routed to responders (request/reply).",
     [](const pb::BrokerCounters& b) {
       return count(b.requests());
     }},
    {"tinybroker_replies_total", "counter",
     "Replies delivered to the callers of requests.",
     [](const pb::BrokerCounters& b) {
       return count(b.replies());
     }},
    {"tinybroker_requests_no_responders_total", "counter",
     "Requests answered NO_RESPONDERS: nobody listened.",
     [](const pb::BrokerCounters& b) {
       return count(b.no_responders());
     }},
    {"tinybroker_requests_timed_out_total", "counter",
     "Requests that passed their timeout without a reply.",
     [](const pb::BrokerCounters& b) {
       return count(b.request_timeouts());
     }},
    {"tinybroker_late_replies_total", "counter",
     "Replies dropped: another reply won, or the caller stopped waiting.",
     [](const pb::BrokerCounters& b) {
       return count(b.late_replies());
     }},
    {"tinybroker_pending_requests", "gauge",
     "Requests waiting for their reply.",
     [](const pb::BrokerCounters& b) {
       return count(b.pending_requests());
     }},
    {"tinybroker_duplicates_total", "counter",
     "Messages whose msg_id was seen on their topic within the "
     "de-duplication window: confirmed, routed nowhere.",
     [](const pb::BrokerCounters& b) {
       return count(b.duplicates());
     }},
    {"tinybroker_dedup_ids", "gauge",
     "Message ids remembered for de-duplication.",
     [](const pb::BrokerCounters& b) {
       return count(b.dedup_ids());
     }},
    {"tinybroker_dedup_evicted_total", "counter",
     "Message ids forgotten before their window ended (dedup.max_ids).",
     [](const pb::BrokerCounters& b) {
       return count(b.dedup_evicted());
     }},
    {"tinybroker_sessions", "gauge", "Open Session streams.",
     [](const pb::BrokerCounters& b) {
       return count(b.sessions());
     }},
    {"tinybroker_topics", "gauge", "Live topics.",
     [](const pb::BrokerCounters& b) {
       return count(b.topics());
     }},
    {"tinybroker_subscriptions", "gauge",
     "Live fan-out subscriptions and group memberships.",
     [](const pb::BrokerCounters& b) {
       return count(b.subscriptions());
     }},
    {"tinybroker_groups", "gauge", "Consumer groups.",
     [](const pb::BrokerCounters& b) {
       return count(b.groups());
     }},
    {"tinybroker_uptime_seconds", "gauge", "Seconds since the broker started.",
     [](const pb::BrokerCounters& b) {
       return seconds(b.uptime_ms());
     }},
    {"tinybroker_resident_memory_bytes", "gauge",
     "Resident memory of the broker process.",
     [](const pb::BrokerCounters& b) {
       return count(b.rss_bytes());
     }},
    {"tinybroker_held_bytes", "gauge",
     "Message bytes held by groups and buffered for slow subscribers.",
     [](const pb::BrokerCounters& b) {
       return count(b.held_bytes());
     }},
    {"tinybroker_buffered_deliveries", "gauge",
     "Deliveries buffered in sessions and not yet written.",
     [](const pb::BrokerCounters& b) {
       return count(b.buffered());
     }},
    {"tinybroker_fanout_scheduled", "gauge",
     "Delayed messages the topics hold for fan-out subscribers until their "
     "due time.",
     [](const pb::BrokerCounters& b) {
       return count(b.fanout_scheduled());
     }},
    {"tinybroker_fanout_delayed_delivered_total", "counter",
     "Delayed messages that fell due and went to their fan-out subscribers.",
     [](const pb::BrokerCounters& b) {
       return count(b.fanout_delayed_delivered());
     }},
    {"tinybroker_fanout_scheduled_refused_total", "counter",
     "Delayed fan-out messages refused at limits.max_delayed_fanout(_per_"
     "topic).",
     [](const pb::BrokerCounters& b) {
       return count(b.fanout_scheduled_refused());
     }},
    {"tinybroker_fanout_expired_total", "counter",
     "Fan-out messages dropped unwritten because their TTL passed in a slow "
     "subscriber's buffer.",
     [](const pb::BrokerCounters& b) {
       return count(b.fanout_expired());
     }},
};

// Appends the delivery latency histogram: cumulative buckets by upper
// bound, the +Inf bucket (every delivery), the sum and the count.
void write_latency_histogram(std::string& out, const pb::LatencyHistogram& h) {
  constexpr std::string_view name = "tinybroker_delivery_latency_seconds";
  header(out, name, "histogram",
         "Time from a message's acceptance to the write of its delivery.");
  auto buckets =
      std::min(h.upper_bounds_seconds_size(), h.cumulative_counts_size());
  auto bucket = std::string{name} + "_bucket";
  for (int i = 0; i < buckets; ++i)
    sample(out, bucket,
           "{le=\"" + format_metric_value(h.upper_bounds_seconds(i)) + "\"}",
           count(h.cumulative_counts(i)));
  sample(out, bucket, "{le=\"+Inf\"}", count(h.count()));
  sample(out, std::string{name} + "_sum", "",
         format_metric_value(h.sum_seconds()));
  sample(out, std::string{name} + "_count", "", count(h.count()));
}

} // namespace

pb::StatsRequest metrics_stats_request(const metrics_options& options) {
  pb::StatsRequest request;
  request.set_limit(metrics_list_limit);
  if (options.per_topic)
    request.set_topic_pattern(">");
  return request;
}

std::string render_metrics(const pb::StatsReply& reply,
                           const metrics_options& options) {
  std::string out;
  const auto& broker = reply.broker();
  for (const auto& m : broker_metrics) {
    header(out, m.name, m.type, m.help);
    sample(out, m.name, "", m.value(broker));
  }
  header(out, "tinybroker_build_info", "gauge",
         "Always 1; the label names the broker's version.");
  sample(out, "tinybroker_build_info", one_label("version", broker.version()),
         "1");
  write_latency_histogram(out, broker.delivery_latency());
  out += render_group_metrics(reply);
  if (options.per_topic)
    out += render_topic_metrics(reply);
  if (reply.has_cluster())
    out += render_cluster_metrics(reply.cluster());
  return out;
}

std::string render_tls_expiry(int64_t not_after) {
  if (not_after == 0)
    return {};
  std::string out;
  constexpr std::string_view name =
      "tinybroker_tls_certificate_expiry_timestamp_seconds";
  header(out, name, "gauge",
         "When the server certificate of the gRPC and metrics listeners "
         "expires, in Unix seconds.");
  sample(out, name, "", std::to_string(not_after));
  return out;
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string format_metric_value(double value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value > 0 ? "+Inf" : "-Inf";
  // The shortest digits that read back as `value`, laid out as Go's
  // strconv.FormatFloat(value, 'g', -1, 64) does (the Prometheus Go client
  // writes `le` labels so): an exponent below -4 or from 6 up is written
  // in scientific notation ("5e-05", "1.5e+06"), the rest in fixed.
  char buf[64];
  auto sci = std::to_chars(buf, buf + sizeof(buf), value,
                           std::chars_format::scientific);
  std::string text(buf, sci.ptr);
  auto exponent = std::atoi(text.c_str() + text.find('e') + 1);
  if (exponent < -4 || exponent >= 6)
    return text;
  auto fixed =
      std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed);
  return std::string(buf, fixed.ptr);
}

} // namespace tb
