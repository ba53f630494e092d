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
//   tinybroker_cluster_promotions_total        replicas promoted here
//   tinybroker_cluster_replicas_held           group replicas kept here
//   tinybroker_cluster_stale_entries_refused_total  old-term entries refused
//   tinybroker_cluster_quorum                  1 while it sees a majority
//   tinybroker_cluster_quorum_refusals_total   group operations refused

#include "net/metrics_format.hpp"

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

} // namespace

std::string render_cluster_metrics(const tinybroker::v1::ClusterStats& c) {
  std::string out;
  uint64_t up = 1; // this node
  for (const auto& p : c.peers())
    up += p.state() == "synced" || p.state() == "syncing" ? 1 : 0;
  out += "# HELP tinybroker_cluster_nodes Nodes of the cluster this node "
         "sees up, itself included.\n"
         "# TYPE tinybroker_cluster_nodes gauge\n"
         "tinybroker_cluster_nodes " +
         std::to_string(up) + "\n";
  out += "# HELP tinybroker_cluster_ready 1 once this node synced with every "
         "reachable peer (it serves only then).\n"
         "# TYPE tinybroker_cluster_ready gauge\n"
         "tinybroker_cluster_ready " +
         std::string(c.ready() ? "1" : "0") + "\n";
  out += "# HELP tinybroker_cluster_groups_owned Consumer groups this node "
         "owns (runs their actor).\n"
         "# TYPE tinybroker_cluster_groups_owned gauge\n"
         "tinybroker_cluster_groups_owned " +
         std::to_string(c.groups_owned()) + "\n";
  out += "# HELP tinybroker_cluster_groups_lost_total Groups dropped because "
         "their owner node went down (what they held is lost).\n"
         "# TYPE tinybroker_cluster_groups_lost_total counter\n"
         "tinybroker_cluster_groups_lost_total " +
         std::to_string(c.groups_lost()) + "\n";
  out += "# HELP tinybroker_cluster_group_conflicts_total Two owners of one "
         "group name met; the lower HRW rank's group was dropped.\n"
         "# TYPE tinybroker_cluster_group_conflicts_total counter\n"
         "tinybroker_cluster_group_conflicts_total " +
         std::to_string(c.group_conflicts()) + "\n";
  // Replicas (issue 32, docs/cluster.md "Replicas").
  out += "# HELP tinybroker_cluster_promotions_total Group replicas this "
         "node promoted to owner after their owner's node died.\n"
         "# TYPE tinybroker_cluster_promotions_total counter\n"
         "tinybroker_cluster_promotions_total " +
         std::to_string(c.promotions()) + "\n";
  out += "# HELP tinybroker_cluster_replicas_held Group replicas this node "
         "keeps for owners on other nodes.\n"
         "# TYPE tinybroker_cluster_replicas_held gauge\n"
         "tinybroker_cluster_replicas_held " +
         std::to_string(c.replicas_held()) + "\n";
  out += "# HELP tinybroker_cluster_stale_entries_refused_total Group "
         "directory entries refused for an older ownership term.\n"
         "# TYPE tinybroker_cluster_stale_entries_refused_total counter\n"
         "tinybroker_cluster_stale_entries_refused_total " +
         std::to_string(c.stale_entries_refused()) + "\n";
  // The majority rule: a majority of the configured nodes, itself included.
  auto majority = c.configured_nodes() <= 1 ||
                  2 * uint64_t{c.visible_nodes()} > c.configured_nodes();
  out += "# HELP tinybroker_cluster_quorum 1 while this node sees a majority "
         "of the configured nodes (it refuses group operations without one, "
         "unless [cluster] quorum = \"none\").\n"
         "# TYPE tinybroker_cluster_quorum gauge\n"
         "tinybroker_cluster_quorum " +
         std::string(majority ? "1" : "0") + "\n";
  out += "# HELP tinybroker_cluster_quorum_refusals_total Group operations "
         "(publishes, joins, acks, requests) refused for want of a "
         "majority.\n"
         "# TYPE tinybroker_cluster_quorum_refusals_total counter\n"
         "tinybroker_cluster_quorum_refusals_total " +
         std::to_string(c.quorum_refusals()) + "\n";
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
