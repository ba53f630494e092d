// A node's cluster actor (issue 30, docs/cluster.md): published on the
// `[cluster] listen` address, it dials the configured peers through CAF's
// middleman, greets each (name, version, epoch, node id, router), watches
// each peer's cluster actor (its down message is how a node learns that a
// peer is gone, CAF 0.17 has no node-down message), tells the router who is
// up and who is gone, and answers `cluster_atom` once the node is ready.
//
//   dial --connect--> middleman --proxy--> hello --> peer's cluster actor
//                                              <-- its hello (or refusal)
//   monitor(peer) ; request(router, peer_up) --ok--> synced
//   down(peer) --> router: peer_down ; the smaller name redials with backoff
//
// On every peer up and down it counts the nodes it sees against the
// configured ones and publishes the majority rule's verdict to the
// sessions (cluster_quorum.hpp).
//
// The rules (which greeting to accept, when to dial, when the node is
// ready) live in cluster_book.hpp; this actor only does the messaging.

#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/broker_context.hpp"
#include "actors/cluster/cluster_book.hpp"
#include "actors/cluster/cluster_quorum.hpp"
#include "actors/protocol.hpp"
#include "config/cluster_config.hpp"

namespace tb {

/// What a cluster actor starts with.
struct cluster_settings {
  /// This node's `[cluster]` settings.
  cluster_config config;
  /// The cluster protocol version sent in greetings (the app identifier).
  std::string version = cluster_app_identifier;
  /// This node's CAF node id, as text.
  std::string node_id;
  /// This node's start time, Unix milliseconds.
  uint64_t epoch = 0;
  /// The local router (handed to peers in the greeting).
  router_actor router;
  /// Who dials: the middleman actor (plain or TLS), answering
  /// `(connect_atom, host, port)` with `(node_id, strong_actor_ptr,
  /// std::set<std::string>)`; a stand-in in tests.
  caf::actor dialer;
  /// Where the actor publishes the majority rule's count for the sessions
  /// (the broker context's); a fresh one if not shared.
  std::shared_ptr<quorum_state> quorum = std::make_shared<quorum_state>();
  /// Where the sessions count memberships that re-join a lost group (the
  /// broker context's); a fresh one if not shared.
  std::shared_ptr<rejoin_counters> rejoins =
      std::make_shared<rejoin_counters>();
};

/// A live peer's handles: the directory later points (groups across nodes,
/// issue 30 points 3 and 4) route by. Only handles of the peer's own actors.
struct cluster_peer_handles {
  /// The peer's cluster actor (monitored: its down message is the loss).
  caf::actor cluster;
  /// The peer's router.
  caf::actor router;
  /// The peer's epoch: a restarted peer replaces its entry.
  uint64_t epoch = 0;
};

/// The state of a cluster actor.
struct cluster_state {
  /// The actor's name in CAF's logs.
  static inline const char* name = "tinybroker.cluster";

  /// Creates the state; the book is set up by the behavior.
  cluster_state() : book("", "", "", {}, 0) {
    // nop
  }

  /// What the actor was started with.
  cluster_settings settings;
  /// The rules and the peers.
  cluster_book book;
  /// The greeting this node sends.
  cluster_hello hello;
  /// The live peers' handles, by node name.
  std::map<std::string, cluster_peer_handles> peers;
  /// Who waits for the node to be ready.
  std::vector<caf::response_promise> waiting;
  /// True once the node reported ready.
  bool ready = false;
  /// The last quorum reading (a starting node of several has none).
  quorum_reading quorum{1, 1, true};
};

/// The pointer a cluster actor's behavior gets.
using cluster_pointer = cluster_actor::stateful_pointer<cluster_state>;

/// Runs a node's cluster actor with `settings`; it starts dialing at once.
cluster_actor::behavior_type cluster_actor_impl(cluster_pointer self,
                                                cluster_settings settings);

} // namespace tb
