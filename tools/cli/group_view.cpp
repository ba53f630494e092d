#include "tools/cli/group_view.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "tools/cli/text_format.hpp"

namespace tb::cli {

namespace {

namespace pb = tinybroker::v1;

// Returns the 1s and 10s rates as one cell: "12.5/10.2".
std::string rate_pair(double one_second, double ten_seconds) {
  return format_rate(one_second) + "/" + format_rate(ten_seconds);
}

// Writes the settings of a group as JSON object "settings".
void write_settings(json_writer& out, const pb::GroupSettings& s) {
  out.open_object("settings")
      .text("pattern", s.pattern())
      .number("ack_wait_ms", s.ack_wait_ms())
      .number("max_deliveries", s.max_deliveries())
      .boolean("unlimited_deliveries", s.unlimited_deliveries())
      .number("max_pending_messages", s.max_pending_messages())
      .number("max_pending_bytes", s.max_pending_bytes())
      .text("overflow", overflow_name(s.overflow()))
      .text("dead_letter", s.dead_letter())
      .text("policy", s.policy())
      .number("max_age_ms", s.max_age_ms())
      .text("on_expiry",
            s.on_expiry() == pb::EXPIRY_DROP ? "drop" : "dead_letter")
      .number("max_priority", s.max_priority())
      .number("dedup_window_ms", s.dedup_window_ms())
      .number("replicas", s.replicas())
      .close_object();
}

// Writes the counters of a group as JSON object "counters".
void write_counters(json_writer& out, const pb::GroupCounters& c) {
  out.open_object("counters")
      .number("pending", c.pending())
      .number("in_flight", c.in_flight())
      .number("members", c.members())
      .number("received", c.received())
      .number("delivered", c.delivered())
      .number("acked", c.acked())
      .number("redelivered", c.redelivered())
      .number("dead_lettered", c.dead_lettered())
      .number("dropped", c.dropped())
      .number("stale_answers", c.stale_answers())
      .number("refused", c.refused())
      .number("held_bytes", c.held_bytes())
      .number("oldest_pending_age_ms", c.oldest_pending_age_ms())
      .real("received_per_second_1s", c.received_per_second_1s())
      .real("received_per_second_10s", c.received_per_second_10s())
      .real("acked_per_second_1s", c.acked_per_second_1s())
      .real("acked_per_second_10s", c.acked_per_second_10s())
      .number("expired", c.expired())
      .number("stalled_members", c.stalled_members())
      .number("expired_ttl", c.expired_ttl())
      .number("scheduled", c.scheduled())
      .signed_number("next_due_unix_ms", c.next_due_unix_ms())
      .close_object();
}

// Writes one member of a group as a JSON array element.
void write_member(json_writer& out, const pb::MemberStats& m) {
  out.open_object()
      .text("name", m.client_name())
      .text("peer", m.peer())
      .text("token", m.token())
      .number("subscription_id", m.subscription_id())
      .number("in_flight", m.in_flight())
      .number("credit", m.credit())
      .number("max_in_flight", m.max_in_flight())
      .number("acks", m.acks())
      .number("nacks", m.nacks())
      .number("rejects", m.rejects())
      .number("oldest_in_flight_age_ms", m.oldest_in_flight_age_ms())
      .boolean("active", m.active())
      .boolean("stalled", m.stalled())
      .number("expired", m.expired())
      .close_object();
}

} // namespace

group_list
list_of(const google::protobuf::RepeatedPtrField<pb::GroupInfo>& groups) {
  group_list result;
  result.reserve(static_cast<std::size_t>(groups.size()));
  for (auto& g : groups)
    result.push_back(&g);
  return result;
}

const char* overflow_name(pb::Overflow overflow) {
  return overflow == pb::OVERFLOW_DROP_OLDEST ? "drop_oldest" : "reject";
}

void print_group_table(std::ostream& out, const group_list& groups) {
  if (groups.empty()) {
    out << "no groups\n";
    return;
  }
  // A cluster names each group's owner node; a node alone has none.
  bool owners = std::any_of(groups.begin(), groups.end(),
                            [](auto* g) { return !g->owner_node().empty(); });
  std::vector<std::string> header{
      "NAME",      "PATTERN",        "MEMBERS",       "PENDING",
      "IN_FLIGHT", "OLDEST_PENDING", "RECEIVED",      "DELIVERED",
      "ACKED",     "REDELIVERED",    "DEAD_LETTERED", "DROPPED",
      "SCHEDULED", "EXPIRED_TTL",    "RECV/S",        "ACK/S"};
  // Replicas (issue 32): the node keeping each group's copy, if any has one.
  bool replicas = std::any_of(groups.begin(), groups.end(), [](auto* g) {
    return !g->replica_node().empty();
  });
  if (replicas)
    header.insert(header.begin() + 1, "REPLICA");
  if (owners)
    header.insert(header.begin() + 1, "OWNER");
  text_table table{header, 2u + (owners ? 1u : 0u) + (replicas ? 1u : 0u)};
  for (auto* g : groups) {
    auto& c = g->counters();
    std::vector<std::string> row{
        g->name(),
        g->settings().pattern(),
        std::to_string(c.members()),
        std::to_string(c.pending()),
        std::to_string(c.in_flight()),
        format_age(c.oldest_pending_age_ms()),
        std::to_string(c.received()),
        std::to_string(c.delivered()),
        std::to_string(c.acked()),
        std::to_string(c.redelivered()),
        std::to_string(c.dead_lettered()),
        std::to_string(c.dropped()),
        std::to_string(c.scheduled()),
        std::to_string(c.expired_ttl()),
        rate_pair(c.received_per_second_1s(), c.received_per_second_10s()),
        rate_pair(c.acked_per_second_1s(), c.acked_per_second_10s())};
    if (replicas)
      row.insert(row.begin() + 1,
                 g->replica_node().empty() ? "-" : g->replica_node());
    if (owners)
      row.insert(row.begin() + 1,
                 g->owner_node().empty() ? "-" : g->owner_node());
    table.add_row(row);
  }
  table.print(out);
}

void print_member_table(std::ostream& out, const group_list& groups) {
  bool tokens = false;
  for (auto* g : groups)
    for (auto& m : g->members())
      tokens = tokens || !m.token().empty();
  text_table table{{"GROUP", "NAME", tokens ? "PEER (TOKEN)" : "PEER",
                    "SUBSCRIPTION", "IN_FLIGHT", "CREDIT", "MAX_IN_FLIGHT",
                    "ACKS", "NACKS", "REJECTS", "OLDEST_IN_FLIGHT", "STATE"},
                   3};
  for (auto* g : groups)
    for (auto& m : g->members())
      table.add_row(
          {g->name(), m.client_name().empty() ? "-" : m.client_name(),
           tokens && !m.token().empty() ? m.peer() + " (" + m.token() + ")"
                                        : m.peer(),
           std::to_string(m.subscription_id()), std::to_string(m.in_flight()),
           std::to_string(m.credit()), std::to_string(m.max_in_flight()),
           std::to_string(m.acks()), std::to_string(m.nacks()),
           std::to_string(m.rejects()), format_age(m.oldest_in_flight_age_ms()),
           !m.active()   ? "left"
           : m.stalled() ? "stalled"
                         : "active"});
  if (table.empty())
    out << "no members\n";
  else
    table.print(out);
}

void write_group(json_writer& out, const pb::GroupInfo& info, bool with_members,
                 std::string_view name) {
  out.open_object(name).text("name", info.name());
  if (!info.owner_node().empty())
    out.text("owner_node", info.owner_node());
  if (!info.replica_node().empty())
    out.text("replica_node", info.replica_node());
  if (!info.owner_node().empty())
    out.number("term", info.term());
  if (info.settings().replicas() > 0) {
    out.boolean("replica_synced", info.replica_synced());
    out.number("replica_unacked", info.replica_unacked());
    out.number("confirmed_unreplicated", info.confirmed_unreplicated());
  }
  write_settings(out, info.settings());
  write_counters(out, info.counters());
  if (with_members) {
    out.open_array("members");
    for (auto& m : info.members())
      write_member(out, m);
    out.close_array();
  }
  out.close_object();
}

} // namespace tb::cli
