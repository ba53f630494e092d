// The cluster's lines of /metrics (docs/cluster.md, docs/operations.md):
//
//   tinybroker_cluster_nodes                   nodes up, this one included
//   tinybroker_cluster_ready                   1 once the node is ready
//   tinybroker_cluster_peer_state{peer,address,state}   1 for the state the
//                                              link to each peer is in
//   tinybroker_cluster_peer_reconnects_total{peer,address}
//   tinybroker_cluster_peer_messages_sent_total{peer,address}
//   tinybroker_cluster_peer_messages_received_total{peer,address}
//   tinybroker_cluster_peer_dropped_total{peer,address}
//   tinybroker_cluster_peer_lost_total{peer,address}
//   tinybroker_cluster_groups_owned            groups this node owns
//   tinybroker_cluster_groups_lost_total       groups lost with their owner
//   tinybroker_cluster_group_conflicts_total   two owners of one name met
//   tinybroker_cluster_quorum                  1 while it sees a majority
//   tinybroker_cluster_quorum_refusals_total   group operations refused
//   tinybroker_cluster_promotions_total        replicas promoted here
//   tinybroker_cluster_replicas_held           group replicas kept here
//   tinybroker_cluster_stale_entries_refused_total  old-term entries refused
//   tinybroker_cluster_memberships_lost_total  memberships whose group was
//                                              lost with its owner node
//   tinybroker_cluster_memberships_rejoined_total  ... that re-joined it
//   tinybroker_cluster_memberships_ended_total     ... that gave up

#include "net/metrics_format.hpp"
#include "net/metrics_lines.hpp"

#include <string>

#include "tinybroker.pb.h"

namespace tb {

namespace {

// The link states a peer may be in, each its own series.
constexpr const char* cluster_metric_states[] = {"connecting", "syncing",
                                                 "synced", "down", "refused"};

// Returns the labels of peer `p`, plus `extra` (`,name="value"` text).
std::string cluster_peer_labels(const tinybroker::v1::ClusterPeer& p,
                                const std::string& extra = {}) {
  return "{peer=\"" + escape_label_value(p.name()) + "\",address=\"" +
         escape_label_value(p.address()) + "\"" + extra + "}";
}

// Appends the node-level series `tinybroker_cluster_<name>` of `type`
// (gauge, counter) with its help text and value.
void add_node_series(std::string& out, const char* name, const char* type,
                     const char* help, uint64_t value) {
  auto series = std::string{"tinybroker_cluster_"} + name;
  metrics_lines::header(out, series, type, help);
  metrics_lines::sample(out, series, "", metrics_lines::count(value));
}

} // namespace

std::string render_cluster_metrics(const tinybroker::v1::ClusterStats& c) {
  std::string out;
  uint64_t up = 1; // this node
  for (const auto& p : c.peers())
    up += p.state() == "synced" || p.state() == "syncing" ? 1 : 0;
  add_node_series(out, "nodes", "gauge",
                  "Nodes of the cluster this node sees up, itself included.",
                  up);
  add_node_series(out, "ready", "gauge",
                  "1 once this node synced with every reachable peer (it "
                  "serves only then).",
                  c.ready() ? 1 : 0);
  add_node_series(out, "groups_owned", "gauge",
                  "Consumer groups this node owns (runs their actor).",
                  c.groups_owned());
  add_node_series(out, "groups_lost_total", "counter",
                  "Groups dropped because their owner node went down (what "
                  "they held is lost).",
                  c.groups_lost());
  add_node_series(out, "group_conflicts_total", "counter",
                  "Two owners of one group name met; the lower HRW rank's "
                  "group was dropped.",
                  c.group_conflicts());
  // The majority rule: a majority of the configured nodes, itself included.
  auto majority = c.configured_nodes() <= 1 ||
                  2 * uint64_t{c.visible_nodes()} > c.configured_nodes();
  add_node_series(out, "quorum", "gauge",
                  "1 while this node sees a majority of the configured nodes "
                  "(it refuses group operations without one, unless "
                  "[cluster] quorum = \"none\").",
                  majority ? 1 : 0);
  add_node_series(out, "quorum_refusals_total", "counter",
                  "Group operations (publishes, joins, acks, requests) "
                  "refused for want of a majority.",
                  c.quorum_refusals());
  // Replicas (issue 32, docs/cluster.md "Replicas").
  add_node_series(out, "promotions_total", "counter",
                  "Group replicas this node promoted to owner after their "
                  "owner's node died.",
                  c.promotions());
  add_node_series(out, "replicas_held", "gauge",
                  "Group replicas this node keeps for owners on other nodes.",
                  c.replicas_held());
  add_node_series(out, "stale_entries_refused_total", "counter",
                  "Group directory entries refused for an older ownership "
                  "term.",
                  c.stale_entries_refused());
  // Memberships that lost their group with its owner (docs/cluster.md,
  // "What a client sees when a group's node dies").
  add_node_series(out, "memberships_lost_total", "counter",
                  "Group memberships of this node's clients whose group was "
                  "lost with its owner node (or replaced by a new owner); "
                  "each re-joins by itself.",
                  c.memberships_lost());
  add_node_series(out, "memberships_rejoined_total", "counter",
                  "Lost group memberships that re-joined the group on its "
                  "next owner.",
                  c.memberships_rejoined());
  add_node_series(out, "memberships_ended_total", "counter",
                  "Lost group memberships that gave up re-joining and ended "
                  "(Unsubscribed).",
                  c.memberships_ended());
  if (c.peers_size() == 0)
    return out;
  out += "# HELP tinybroker_cluster_peer_state 1 for the state of the link "
         "to each peer (connecting, syncing, synced, down, refused), 0 for "
         "the others.\n"
         "# TYPE tinybroker_cluster_peer_state gauge\n";
  for (const auto& p : c.peers())
    for (auto* state : cluster_metric_states)
      out += "tinybroker_cluster_peer_state" +
             cluster_peer_labels(p, std::string{",state=\""} + state + "\"") +
             (p.state() == state ? " 1\n" : " 0\n");
  out += "# HELP tinybroker_cluster_peer_reconnects_total How often each "
         "peer came back after it was down.\n"
         "# TYPE tinybroker_cluster_peer_reconnects_total counter\n";
  for (const auto& p : c.peers())
    out += "tinybroker_cluster_peer_reconnects_total" + cluster_peer_labels(p) +
           " " + std::to_string(p.reconnects()) + "\n";
  out += "# HELP tinybroker_cluster_peer_messages_sent_total Messages sent "
         "to each peer's subscribers (one per message, however many "
         "subscribers it has there).\n"
         "# TYPE tinybroker_cluster_peer_messages_sent_total counter\n";
  for (const auto& p : c.peers())
    out += "tinybroker_cluster_peer_messages_sent_total" +
           cluster_peer_labels(p) + " " + std::to_string(p.messages_sent()) +
           "\n";
  out += "# HELP tinybroker_cluster_peer_messages_received_total Messages "
         "received from each peer for this node's subscribers.\n"
         "# TYPE tinybroker_cluster_peer_messages_received_total counter\n";
  for (const auto& p : c.peers())
    out += "tinybroker_cluster_peer_messages_received_total" +
           cluster_peer_labels(p) + " " +
           std::to_string(p.messages_received()) + "\n";
  out += "# HELP tinybroker_cluster_peer_dropped_total Messages for each "
         "peer dropped because its link buffer (link_buffer_bytes) was "
         "full.\n"
         "# TYPE tinybroker_cluster_peer_dropped_total counter\n";
  for (const auto& p : c.peers())
    out += "tinybroker_cluster_peer_dropped_total" + cluster_peer_labels(p) +
           " " + std::to_string(p.dropped()) + "\n";
  out += "# HELP tinybroker_cluster_peer_lost_total Messages lost with each "
         "peer: buffered for it or sent and not acknowledged when it went "
         "down.\n"
         "# TYPE tinybroker_cluster_peer_lost_total counter\n";
  for (const auto& p : c.peers())
    out += "tinybroker_cluster_peer_lost_total" + cluster_peer_labels(p) + " " +
           std::to_string(p.lost()) + "\n";
  return out;
}

} // namespace tb
