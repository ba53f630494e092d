// The per-group and per-topic series of /metrics (docs/operations.md,
// "Metrics"): one table row per series, each a name, a type, a help text
// and how to read it from Stats.

#include "net/metrics_format.hpp"
#include "net/metrics_lines.hpp"

#include "tinybroker.pb.h"

namespace tb {

namespace pb = tinybroker::v1;
using namespace metrics_lines;

namespace {

// A per-group metric, labelled `group`.
struct group_metric {
  std::string_view name;
  std::string_view type;
  std::string_view help;
  std::string (*value)(const pb::GroupCounters&);
};

const group_metric group_metrics[] = {
    {"tinybroker_group_pending_messages", "gauge",
     "Messages the group holds that are not in flight.",
     [](const pb::GroupCounters& g) {
       return count(g.pending());
     }},
    {"tinybroker_group_in_flight", "gauge",
     "Deliveries of the group awaiting an answer.",
     [](const pb::GroupCounters& g) {
       return count(g.in_flight());
     }},
    {"tinybroker_group_members", "gauge", "Connected members of the group.",
     [](const pb::GroupCounters& g) {
       return count(g.members());
     }},
    {"tinybroker_group_stalled_members", "gauge",
     "Members marked stalled: their deliveries passed ack_wait unanswered 3 "
     "times in a row; they get no new deliveries until they answer.",
     [](const pb::GroupCounters& g) {
       return count(g.stalled_members());
     }},
    {"tinybroker_group_held_bytes", "gauge",
     "Payload, header and key bytes the group holds.",
     [](const pb::GroupCounters& g) {
       return count(g.held_bytes());
     }},
    {"tinybroker_group_oldest_pending_age_seconds", "gauge",
     "Age of the oldest message held and not in flight (0 when none waits).",
     [](const pb::GroupCounters& g) {
       return seconds(g.oldest_pending_age_ms());
     }},
    {"tinybroker_group_received_total", "counter",
     "Messages the group accepted.",
     [](const pb::GroupCounters& g) {
       return count(g.received());
     }},
    {"tinybroker_group_delivered_total", "counter",
     "Deliveries the group made, first attempts and redeliveries.",
     [](const pb::GroupCounters& g) {
       return count(g.delivered());
     }},
    {"tinybroker_group_acked_total", "counter", "Messages acked.",
     [](const pb::GroupCounters& g) {
       return count(g.acked());
     }},
    {"tinybroker_group_redelivered_total", "counter", "Redeliveries made.",
     [](const pb::GroupCounters& g) {
       return count(g.redelivered());
     }},
    {"tinybroker_group_expired_total", "counter",
     "Deliveries that passed ack_wait unanswered.",
     [](const pb::GroupCounters& g) {
       return count(g.expired());
     }},
    {"tinybroker_group_dead_lettered_total", "counter",
     "Messages sent to the dead letter topic.",
     [](const pb::GroupCounters& g) {
       return count(g.dead_lettered());
     }},
    {"tinybroker_group_dropped_total", "counter",
     "Messages dropped by overflow = drop_oldest or dead_letter = none.",
     [](const pb::GroupCounters& g) {
       return count(g.dropped());
     }},
    {"tinybroker_group_expired_ttl_total", "counter",
     "Messages that expired while waiting (ttl_ms or max_age), "
     "dead-lettered or dropped per on_expiry.",
     [](const pb::GroupCounters& g) {
       return count(g.expired_ttl());
     }},
    {"tinybroker_group_scheduled_messages", "gauge",
     "Messages held apart until their due time (delay_ms, "
     "not_before_unix_ms, nacks with a delay).",
     [](const pb::GroupCounters& g) {
       return count(g.scheduled());
     }},
    {"tinybroker_group_next_due_timestamp_seconds", "gauge",
     "When the earliest scheduled message falls due, in Unix seconds (0 "
     "when none is scheduled).",
     [](const pb::GroupCounters& g) {
       return seconds(static_cast<uint64_t>(g.next_due_unix_ms()));
     }},
    {"tinybroker_group_refused_total", "counter",
     "Messages refused because the group was full (overflow = reject).",
     [](const pb::GroupCounters& g) {
       return count(g.refused());
     }},
};

// A per-topic metric, labelled `topic`.
struct topic_metric {
  std::string_view name;
  std::string_view help;
  uint64_t (*value)(const pb::TopicStats&);
};

const topic_metric topic_metrics[] = {
    {"tinybroker_topic_destinations",
     "Fan-out subscriptions the topic routes to.",
     [](const pb::TopicStats& t) {
       return t.destinations();
     }},
    {"tinybroker_topic_publishers",
     "Sessions that publish to the topic (cache its route).",
     [](const pb::TopicStats& t) {
       return t.publishers();
     }},
};

} // namespace

std::string render_group_metrics(const pb::StatsReply& reply) {
  std::string out;
  if (reply.groups_size() == 0)
    return out;
  for (const auto& m : group_metrics) {
    header(out, m.name, m.type, m.help);
    for (const auto& g : reply.groups())
      sample(out, m.name, one_label("group", g.name()), m.value(g.counters()));
  }
  return out;
}

std::string render_topic_metrics(const pb::StatsReply& reply) {
  std::string out;
  for (const auto& m : topic_metrics) {
    header(out, m.name, "gauge", m.help);
    for (const auto& t : reply.topics())
      sample(out, m.name, one_label("topic", t.name()), count(m.value(t)));
  }
  return out;
}

} // namespace tb
