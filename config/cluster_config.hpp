// The `[cluster]` table (issue 30, docs/cluster.md) as plain values: this
// node's name and cluster address, the other nodes' addresses, failure
// detection times, the bounds of the links between nodes and TLS between
// nodes. No `[cluster]` table: a single node, exactly as before.

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace tb {

/// The application identifier nodes exchange in CAF's handshake: a node of
/// another cluster protocol version is refused before any message (v2: a
/// message crosses as its record's bytes, `message_record::save`; v3: a
/// group's deliveries cross as runs of raw bytes, `save_deliveries`).
inline constexpr const char* cluster_app_identifier = "tinybroker.cluster.v3";

/// The environment variable that replaces `cluster_app_identifier`, for the
/// tests of the version check only (docs/cluster.md): not for production.
inline constexpr const char* cluster_app_identifier_env =
    "TINYBROKER_TEST_CLUSTER_APP_ID";

/// Whether a node needs a majority of the configured nodes for group
/// operations (issue 32, docs/cluster.md "Majority rule").
enum class quorum_rule {
  /// A node that sees fewer than a majority of the configured nodes
  /// (itself included) refuses group operations; the default.
  majority,
  /// No rule: every node runs group operations whatever it sees (a 2-node
  /// cluster, at the risk of two owners of a group during a partition).
  none,
};

/// How one node of a cluster finds and watches the others.
struct cluster_config {
  /// This node's name, unique in the cluster (1 to 128 of A-Z a-z 0-9 _ -);
  /// empty means no cluster (the default).
  std::string node_name;
  /// Where this node listens for the other nodes, `HOST:PORT`; the other
  /// nodes list this address in their `peers`.
  std::string listen;
  /// The cluster addresses of the other nodes, `HOST:PORT` each.
  std::vector<std::string> peers;
  /// How often a node sends a heartbeat to each peer it is connected to
  /// (CAF's `middleman.heartbeat-interval`).
  std::chrono::milliseconds heartbeat{200};
  /// How long a connected peer may stay silent before it counts as down
  /// (CAF's `middleman.connection-timeout`); also how long a starting node
  /// waits for a configured peer before it reports ready without it.
  std::chrono::milliseconds dead_after{1000};
  /// The most unacknowledged batches a link to one peer has in flight
  /// (read by the link actors, issue 30 point 2).
  std::size_t link_window_batches = 16;
  /// The most bytes a link buffers for one peer beyond its window; past
  /// it, messages to that peer are dropped and counted (issue 30 point 2).
  std::size_t link_buffer_bytes = 64u << 20;
  /// Whether nodes talk TLS to each other, with `[tls]`'s cert and key and
  /// `[tls] client_ca` as the CA every node's certificate must chain to.
  bool tls = false;
  /// Whether group operations need a majority of the configured nodes
  /// (`[cluster] quorum`, "majority" or "none").
  quorum_rule quorum = quorum_rule::majority;
  /// The default `replicas` of groups that set none (issue 32): 0 or 1.
  uint32_t replicas = 0;

  /// Returns the configured nodes: this node and its peers.
  std::size_t configured_nodes() const noexcept {
    return enabled() ? 1 + peers.size() : 1;
  }

  /// Returns true if this node is part of a cluster.
  bool enabled() const noexcept {
    return !node_name.empty();
  }
};

/// Returns true if `x` and `y` hold the same cluster settings.
inline bool operator==(const cluster_config& x, const cluster_config& y) {
  return std::tie(x.node_name, x.listen, x.peers, x.heartbeat, x.dead_after,
                  x.link_window_batches, x.link_buffer_bytes, x.tls, x.quorum,
                  x.replicas) ==
         std::tie(y.node_name, y.listen, y.peers, y.heartbeat, y.dead_after,
                  y.link_window_batches, y.link_buffer_bytes, y.tls, y.quorum,
                  y.replicas);
}

/// Returns true if `x` and `y` differ in any cluster setting.
inline bool operator!=(const cluster_config& x, const cluster_config& y) {
  return !(x == y);
}

} // namespace tb
