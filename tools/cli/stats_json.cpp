// `tinybroker-cli stats --json`: the Stats reply as one line of JSON, with
// the proto's field names and numbers as JSON numbers, written with the
// same json_writer (and group objects) as the other commands' --json.

#include "tools/cli/json_writer.hpp"
#include "tools/cli/stats_view.hpp"

namespace tb::cli {

namespace {

namespace pb = tinybroker::v1;

// Writes the latency histogram as object "delivery_latency".
void write_histogram(json_writer& out, const pb::LatencyHistogram& h) {
  out.open_object("delivery_latency").open_array("upper_bounds_seconds");
  for (auto bound : h.upper_bounds_seconds())
    out.real({}, bound);
  out.close_array().open_array("cumulative_counts");
  for (auto count : h.cumulative_counts())
    out.number({}, count);
  out.close_array()
      .number("count", h.count())
      .real("sum_seconds", h.sum_seconds())
      .close_object();
}

// Writes the broker totals as object "broker".
void write_broker(json_writer& out, const pb::BrokerCounters& b) {
  out.open_object("broker")
      .number("published", b.published())
      .number("unrouted", b.unrouted())
      .number("delivered", b.delivered())
      .number("dropped", b.dropped())
      .number("refused", b.refused())
      .number("unauthenticated", b.unauthenticated())
      .number("permission_denied", b.permission_denied())
      .number("requests", b.requests())
      .number("replies", b.replies())
      .number("no_responders", b.no_responders())
      .number("request_timeouts", b.request_timeouts())
      .number("late_replies", b.late_replies())
      .number("pending_requests", b.pending_requests())
      .number("duplicates", b.duplicates())
      .number("dedup_ids", b.dedup_ids())
      .number("dedup_evicted", b.dedup_evicted())
      .number("sessions", b.sessions())
      .number("topics", b.topics())
      .number("subscriptions", b.subscriptions())
      .number("groups", b.groups())
      .text("version", b.version())
      .number("uptime_ms", b.uptime_ms())
      .number("rss_bytes", b.rss_bytes())
      .number("held_bytes", b.held_bytes())
      .number("buffered", b.buffered())
      .number("fanout_scheduled", b.fanout_scheduled())
      .signed_number("fanout_next_due_unix_ms", b.fanout_next_due_unix_ms())
      .number("fanout_delayed_delivered", b.fanout_delayed_delivered())
      .number("fanout_scheduled_refused", b.fanout_scheduled_refused())
      .number("fanout_expired", b.fanout_expired());
  write_histogram(out, b.delivery_latency());
  out.close_object();
}

// Writes the topics as array "topics".
void write_topics(json_writer& out, const pb::StatsReply& reply) {
  out.open_array("topics");
  for (auto& t : reply.topics())
    out.open_object()
        .text("name", t.name())
        .number("destinations", t.destinations())
        .number("groups", t.groups())
        .number("publishers", t.publishers())
        .close_object();
  out.close_array();
}

// Writes the sessions as array "sessions".
void write_sessions(json_writer& out, const pb::StatsReply& reply) {
  out.open_array("sessions");
  for (auto& s : reply.sessions())
    out.open_object()
        .text("name", s.client_name())
        .text("peer", s.peer())
        .text("token", s.token())
        .number("permission_denied", s.permission_denied())
        .number("published", s.published())
        .number("unrouted", s.unrouted())
        .number("delivered", s.delivered())
        .number("dropped", s.dropped())
        .number("subscriptions", s.subscriptions())
        .number("buffered_messages", s.buffered_messages())
        .number("buffered_bytes", s.buffered_bytes())
        .number("requests", s.requests())
        .number("replies", s.replies())
        .number("no_responders", s.no_responders())
        .number("request_timeouts", s.request_timeouts())
        .number("late_replies", s.late_replies())
        .number("connected_ms", s.connected_ms())
        .close_object();
  out.close_array();
}

// Writes the actors as array "actors".
void write_actors(json_writer& out, const pb::StatsReply& reply) {
  out.open_array("actors");
  for (auto& a : reply.actors())
    out.open_object()
        .text("kind", a.kind())
        .text("name", a.name())
        .number("id", a.id())
        .number("mailbox", a.mailbox())
        .close_object();
  out.close_array();
}

} // namespace

std::string stats_json(const pb::StatsReply& reply) {
  json_writer out;
  out.open_object();
  write_broker(out, reply.broker());
  write_topics(out, reply);
  out.number("topics_matched", reply.topics_matched());
  out.open_array("groups");
  for (auto& g : reply.groups())
    write_group(out, g, true);
  out.close_array().number("groups_matched", reply.groups_matched());
  write_sessions(out, reply);
  out.number("sessions_matched", reply.sessions_matched());
  write_actors(out, reply);
  out.close_object();
  return out.str();
}

} // namespace tb::cli
