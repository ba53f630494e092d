// The message types of a cluster (issue 30, docs/cluster.md). Part of the
// protocol (actors/protocol.hpp includes this file and gives the type IDs):
// every type here crosses nodes, so each has an `inspect()`.
//
// The cluster actors' greeting and the view Stats and /metrics read:
//   cluster A --hello--> cluster B (name, version, epoch, node id, router)
//
// Fan-out across nodes: the link actors' interfaces, the network batches
// they carry, and the interest two routers exchange.
//
//   node B (publisher)                              node A (subscriber)
//   session --link--> link_out(B->A) ==link_frame==> link_in(A<-B) --remote-->
//                          ^                              |       delivery
//                          session
//                          +----------link_ack------------+       (local only)
//
//   router A --isync (full interest, in chunks)--> router B  (on peer_up)
//   router A --interest (pattern 0->1 / ->0)-----> router B  (RS+ / RS-)

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/message.hpp"

namespace tb {

// -- the cluster actors' greeting and view -----------------------------------

/// What one node tells another when they meet, and answers to it.
struct cluster_hello {
  /// The node's name (`[cluster] name`), unique in the cluster.
  std::string name;
  /// The cluster protocol version (the handshake's app identifier).
  std::string version;
  /// When the node started, in Unix milliseconds: a restarted node has a
  /// larger epoch and replaces its old self.
  uint64_t epoch = 0;
  /// CAF's node id of the node's process, as text.
  std::string node_id;
  /// The node's cluster listen address, for the peers that redial it.
  std::string address;
  /// The node's cluster actor (the handle peers monitor).
  caf::actor cluster;
  /// The node's router (handed to the local router in `peer_up`).
  caf::actor router;
};

/// @relates cluster_hello
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_hello& x) {
  return f(caf::meta::type_name("cluster_hello"), x.name, x.version, x.epoch,
           x.node_id, x.address, x.cluster, x.router);
}

/// One peer as this node's cluster actor sees it.
struct cluster_peer_view {
  /// The peer's node name; empty while nothing answered at `address`.
  std::string name;
  /// The peer's cluster address (configured, or the one it announced).
  std::string address;
  /// "connecting", "syncing", "synced", "down" or "refused".
  std::string state;
  /// Since when the peer is in `state`, Unix milliseconds.
  uint64_t since_unix_ms = 0;
  /// The peer's epoch (its start time, Unix milliseconds); 0 if unknown.
  uint64_t epoch = 0;
  /// How often the peer came back after it was down.
  uint64_t reconnects = 0;
  /// The peer's CAF node id, as text.
  std::string node_id;
  /// Why the last attempt failed or the peer was refused; empty if none.
  std::string last_error;
  /// Failed dial attempts since the last success.
  uint64_t failed_dials = 0;
};

/// @relates cluster_peer_view
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_peer_view& x) {
  return f(caf::meta::type_name("cluster_peer_view"), x.name, x.address,
           x.state, x.since_unix_ms, x.epoch, x.reconnects, x.node_id,
           x.last_error, x.failed_dials);
}

/// The cluster as this node sees it (Stats' cluster section).
struct cluster_view {
  /// This node's name.
  std::string node_name;
  /// This node's cluster listen address.
  std::string listen;
  /// This node's epoch (start time, Unix milliseconds).
  uint64_t epoch = 0;
  /// True once the node reported ready.
  bool ready = false;
  /// Every peer, configured or met, sorted by address.
  std::vector<cluster_peer_view> peers;
  /// The configured nodes: this node and its `[cluster] peers`.
  uint32_t configured_nodes = 1;
  /// The configured nodes this node sees, itself included.
  uint32_t visible_nodes = 1;
  /// True if the majority rule lets this node run group operations.
  bool has_quorum = true;
  /// Group operations refused for want of quorum since the start.
  uint64_t quorum_refusals = 0;
  /// Group memberships of this node's sessions whose group was lost with
  /// its owner node (or replaced), since the start.
  uint64_t memberships_lost = 0;
  /// Of those, the ones that re-joined the group on its next owner.
  uint64_t memberships_rejoined = 0;
  /// Of those, the ones that gave up re-joining and ended (Unsubscribed).
  uint64_t memberships_ended = 0;
};

/// @relates cluster_view
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_view& x) {
  return f(caf::meta::type_name("cluster_view"), x.node_name, x.listen, x.epoch,
           x.ready, x.peers, x.configured_nodes, x.visible_nodes, x.has_quorum,
           x.quorum_refusals, x.memberships_lost, x.memberships_rejoined,
           x.memberships_ended);
}

// -- links
// ---------------------------------------------------------------------

/// One network batch of a link: messages of one or more publish frames, in
/// publish order, with the link's sequence number (1, 2, ...).
struct link_frame {
  /// Its sequence number; the inbound side acks it.
  uint64_t seq = 0;
  /// The messages.
  std::vector<message_ref> messages;
};

/// @relates link_frame
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_frame& x) {
  return f(caf::meta::type_name("link_frame"), x.seq, x.messages);
}

/// Counters of one link, outbound and inbound (Stats: per peer).
struct link_stats {
  /// Messages sent to the peer.
  uint64_t messages_sent = 0;
  /// Network batches sent to the peer.
  uint64_t batches_sent = 0;
  /// Messages received from the peer.
  uint64_t messages_received = 0;
  /// Network batches received from the peer.
  uint64_t batches_received = 0;
  /// Messages for the peer dropped because its buffer was full.
  uint64_t dropped = 0;
  /// Messages waiting to be sent (beyond the window).
  uint64_t buffered_messages = 0;
  /// Their bytes, against `link_buffer_bytes`.
  uint64_t buffered_bytes = 0;
  /// Batches sent and not yet acknowledged, at most `link_window_batches`.
  uint64_t in_flight_batches = 0;
};

/// @relates link_stats
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_stats& x) {
  return f(caf::meta::type_name("link_stats"), x.messages_sent, x.batches_sent,
           x.messages_received, x.batches_received, x.dropped,
           x.buffered_messages, x.buffered_bytes, x.in_flight_batches);
}

/// The receiving end of a link, on the subscribers' node: delivers what a
/// peer sent to local fan-out subscribers only and acks each batch.
using link_in_actor =
    caf::typed_actor<caf::reacts_to<link_atom, link_frame>,
                     caf::replies_to<stats_atom>::with<link_stats>>;

/// The sending end of a link, on the publishers' node: a destination of
/// every route the peer is interested in. Sessions hand it one batch per
/// publish frame; the peer's inbound actor acks what it delivered.
using link_out_actor =
    caf::typed_actor<caf::reacts_to<link_atom, std::vector<message_ref>>,
                     caf::reacts_to<link_ack_atom, uint64_t>,
                     caf::replies_to<stats_atom>::with<link_stats>,
                     caf::replies_to<peer_down_atom>::with<uint64_t>>;

/// How the links toward peers are bounded (`[cluster] link_window_batches`
/// and `link_buffer_bytes` once the config has them).
struct link_settings {
  /// The most batches sent and not acknowledged.
  std::size_t window_batches = 16;
  /// The most bytes of messages waiting beyond the window; past it,
  /// messages for that peer are dropped and counted.
  std::size_t buffer_bytes = std::size_t{8} << 20;
  /// The most message bytes in one network batch.
  std::size_t batch_bytes = std::size_t{64} << 10;
  /// The most messages in one network batch.
  std::size_t batch_messages = 1024;
};

// -- interest
// ------------------------------------------------------------------

/// One chunk of a router's full interest, sent to a peer's router when the
/// peer connected: the patterns of its local fan-out subscriptions and the
/// inbound actor the peer's link should send to.
struct interest_sync {
  /// The sender's inbound actor for the receiver's traffic.
  link_in_actor inbound;
  /// Patterns with at least one local fan-out subscription.
  std::vector<std::string> patterns;
  /// True for the last chunk: the receiver then knows the full interest.
  bool last = false;
};

/// @relates interest_sync
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, interest_sync& x) {
  return f(caf::meta::type_name("interest_sync"), x.inbound, x.patterns,
           x.last);
}

/// What one peer looks like from this node (Stats: per peer).
struct peer_stats {
  /// The peer's node name (empty until the cluster actor named it).
  std::string name;
  /// Patterns the peer is interested in: routes here send to it.
  uint64_t interest_patterns = 0;
  /// True once the peer's full interest was applied here.
  bool synced = false;
  /// The link's counters.
  link_stats link;
  /// Messages lost with the peer: buffered or in flight (sent, not
  /// acknowledged) to it when it went down, over all its downs.
  uint64_t lost = 0;
};

/// @relates peer_stats
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_stats& x) {
  return f(caf::meta::type_name("peer_stats"), x.name, x.interest_patterns,
           x.synced, x.link, x.lost);
}

/// Every peer of a node, by name.
using peer_stats_list = std::vector<peer_stats>;

// -- groups across nodes
// -------------------------------------------------------

/// The router's group directory in numbers (Stats: ClusterStats 6-9).
struct directory_stats {
  /// Groups this node owns.
  uint64_t owned = 0;
  /// Groups of other nodes in the directory.
  uint64_t remote = 0;
  /// Groups dropped with their owner node, since the start.
  uint64_t lost = 0;
  /// Two-owner conflicts resolved, since the start.
  uint64_t conflicts = 0;
  /// Replicas this node promoted to owner, since the start (issue 32).
  uint64_t promotions = 0;
  /// Replica actors this node keeps.
  uint64_t replicas_held = 0;
  /// Directory entries refused for a lower ownership term, since the start.
  uint64_t stale_entries_refused = 0;
};

/// @relates directory_stats
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, directory_stats& x) {
  return f(caf::meta::type_name("directory_stats"), x.owned, x.remote, x.lost,
           x.conflicts, x.promotions, x.replicas_held, x.stale_entries_refused);
}

} // namespace tb
