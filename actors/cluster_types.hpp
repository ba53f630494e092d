// The messages of the cluster actor (issue 30, docs/cluster.md): the
// greeting nodes exchange and the view Stats and /metrics read. Part of the
// protocol (actors/protocol.hpp includes it and gives them type IDs); the
// greeting crosses the network, so every field is serializable.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

namespace tb {

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
};

/// @relates cluster_view
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_view& x) {
  return f(caf::meta::type_name("cluster_view"), x.node_name, x.listen, x.epoch,
           x.ready, x.peers);
}

} // namespace tb
