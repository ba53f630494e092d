// What the router keeps about its subscriptions, peers, groups and
// replicas, and what it is started with (the router: router_actor.hpp).

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "actors/broker_context.hpp"
#include "actors/group/group_actor.hpp"
#include "actors/protocol.hpp"

namespace tb {

/// One entry of the pattern trie: a fan-out subscription or a group.
struct router_subscription {
  /// The pattern it was made with.
  std::string pattern;
  /// The subscriber's session and subscription id (fan-out only).
  fanout_target target;
  /// The group (groups only).
  group_actor group;
  /// The link to a peer node interested in the pattern (cluster only).
  link_out_actor link;
};

/// A peer node as its router knows it (cluster,
/// actors/router/router_peers.cpp).
struct router_peer {
  /// Its node name; empty until `peer_up` named it.
  std::string name;
  /// Its router; null until `peer_up`.
  caf::actor router;
  /// This node's inbound actor for the peer's traffic.
  link_in_actor inbound;
  /// The link toward the peer's inbound actor (from its first `isync`).
  link_out_actor outbound;
  /// The patterns the peer is interested in, with their keys in the trie.
  std::unordered_map<std::string, uint64_t> interest;
  /// True once the peer's full interest is applied here.
  bool synced = false;
  /// True once this node sent the peer its full interest (and its groups).
  bool sync_sent = false;
  /// True once the peer's owned groups are applied here (groups across
  /// nodes): `peer_up` is answered when this and `synced` hold.
  bool groups_synced = false;
  /// The answers to `peer_up` (one per request), while the peer's interest
  /// is still coming.
  std::vector<caf::typed_response_promise<caf::ok_atom>> ready;
  /// Interest changes the peer has not applied yet, by number: each calls
  /// its function once, when the peer applied it or went away.
  std::unordered_map<uint64_t, std::function<void()>> waits;
  /// The number of the next wait.
  uint64_t next_wait = 1;
};

/// A request to a peer node's actor, waiting for its answer; `fail` is
/// called with node_unavailable if the node goes down first.
struct pending_request {
  /// What the request is about, for the error ("group \"g\"").
  std::string what;
  /// Answers the request with an error.
  std::function<void(const caf::error&)> fail;
};

/// A consumer group as the router knows it.
struct router_group {
  /// The group actor.
  group_actor handle;
  /// Its settings.
  group_settings settings;
  /// Its key in the pattern trie.
  uint64_t key = 0;
  /// The node that owns it (groups across nodes); empty: this node.
  std::string owner;
  /// The owner node's epoch (remote groups only).
  uint64_t epoch = 0;
  /// The owner node's router (remote groups only): its loss drops the
  /// group, and requests to the group are pending on it.
  caf::actor_addr owner_router;
  // -- replicas (actors/router/router_replicas.cpp, issue 32) ----------------
  /// Ownership term: 0 when created, +1 each time a replica took over.
  uint64_t term = 0;
  /// The node keeping the group's replica; empty if none.
  std::string replica;
  /// Owned groups: true while a replica node is being asked (`grepl`).
  bool placing = false;
  /// Remote groups: true once the owner's node is gone while a replica
  /// lives; the entry stays (a publish to it fails) until the new owner's
  /// `gadd` replaces it or the takeover timeout drops it.
  bool owner_lost = false;
};

/// A replica this node keeps of a group another node owns (issue 32).
struct held_replica {
  /// The replica actor.
  replica_actor handle;
  /// The owner's node.
  std::string owner;
  /// The ownership term it was asked for.
  uint64_t term = 0;
  /// The group's settings as the owner asked (used if the replica's own
  /// state has none when promoted).
  group_settings settings;
};

/// What the router is started with.
struct router_settings {
  /// How long a topic with no subscribers and no publishers lives on.
  std::chrono::milliseconds topic_idle_timeout{60000};
  /// The number of topic shards.
  std::size_t topic_shards = 4;
  /// Whether joining an unknown group creates it with `group_defaults`.
  bool auto_create_groups = true;
  /// Settings of auto-created groups (and of omitted settings).
  group_settings group_defaults;
  /// The context of the session actor that publishes dead letters; the
  /// router fills in itself as its router.
  broker_context session_context;
  /// Gives group deliveries their ids.
  std::shared_ptr<id_sequence> delivery_ids = std::make_shared<id_sequence>();
  /// De-duplication by msg_id: the window, and the ids remembered broker
  /// wide (each shard remembers its share).
  dedup_config dedup;
  /// The bounds of links to peer nodes (cluster).
  link_settings links;
  /// The most patterns in one chunk of the interest sync with a peer.
  std::size_t interest_chunk = 1024;
  /// This node's name in a cluster (`[cluster] name`); empty on a node
  /// alone. Groups across nodes: the owner named in directory entries.
  std::string node_name;
  /// This node's epoch, Unix milliseconds; 0: the router's start.
  uint64_t node_epoch = 0;
  /// The config groups (`[[groups]]`): after an owner's death, the router
  /// creates those whose HRW owner it now is and that nobody holds.
  std::vector<std::pair<std::string, group_settings>> config_groups;
  /// How long the other routers keep a replicated group whose owner node
  /// died before dropping it, waiting for the replica's takeover
  /// (`[cluster] dead_after` + 2 s; issue 32).
  std::chrono::milliseconds takeover_timeout{3000};
};

} // namespace tb
