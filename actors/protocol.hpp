// The one place for tinybroker's atoms, message types and actor interfaces:
// this header and the ones it includes for them (actors/atoms.hpp for the
// atoms; route_types for routes and the session, group and replica
// interfaces; group_types, stats_types, request_types and dedup_types for the
// structs of their feature). Every type ID is given here.
//
// Every type that travels between actors is declared in that set, has an
// `inspect()` overload and a type ID in the `tinybroker` block, so that
// actors could later live on other nodes through CAF's network layer. The
// only exceptions are the bridge types in route_types (`client_frame_ptr`,
// `unary_call_ptr`, `unary_request_ptr`): they link a gRPC reactor to its
// session actor, which by construction live in the same process.

#pragma once

#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/typed_actor.hpp>

#include "actors/route_types.hpp"

namespace tb {

/// Owns the routes of the topics whose names hash to it, and pushes each
/// change to the sessions caching the route (see actors/topic/topic_shard.hpp).
using topic_shard_actor = caf::typed_actor<
    caf::replies_to<attach_atom, std::vector<topic_seed>,
                    session_actor>::with<route_list>,
    caf::reacts_to<detach_atom, std::string, session_actor>,
    // Adds subscriptions; the shard answers its sender with
    // `added_dest_atom` and the ticket, not as a CAF request (CAF 0.17 keeps
    // a request's handler in a vector that every answer shifts).
    caf::reacts_to<add_dest_atom, fanout_subscriptions, uint64_t>,
    caf::reacts_to<del_dest_atom, std::string, fanout_target>,
    caf::replies_to<add_group_atom, std::string, group_actor, uint64_t,
                    group_actor>::with<caf::ok_atom>,
    caf::reacts_to<del_group_atom, std::string, group_actor>,
    caf::reacts_to<tick_atom>,
    caf::replies_to<stats_atom, stats_query>::with<shard_view>,
    caf::replies_to<schedule_atom, delayed_batch>::with<enqueue_reply>,
    caf::reacts_to<due_atom>,
    caf::replies_to<dedup_atom, dedup_query>::with<dedup_reply>,
    caf::reacts_to<dedup_tick_atom>,
    // Fan-out across nodes: a peer's interest as a destination.
    caf::replies_to<add_link_atom, std::vector<std::string>,
                    link_out_actor>::with<caf::ok_atom>,
    caf::reacts_to<del_link_atom, std::vector<std::string>, link_out_actor>,
    caf::reacts_to<drop_link_atom, link_out_actor>>;

/// An actor that answers the Stats view with its kind, name and mailbox;
/// register one with `observe_atom` at the router to list it (spec 11).
using observable_actor =
    caf::typed_actor<caf::replies_to<stats_atom>::with<actor_stats>>;

/// The router's answer to a Stats query: its own counters and the actors
/// the collector asks next.
struct router_view {
  /// The router's counters.
  router_stats router;
  /// The topic shards, each asked for its matching topics.
  std::vector<topic_shard_actor> shards;
  /// Every group (in a cluster: every group of the cluster, once).
  std::vector<group_actor> groups;
  /// The node owning each of `groups`, in the same order (empty names on a
  /// node alone).
  std::vector<std::string> group_owners;
  /// The node keeping each group's replica (empty: none) and its ownership
  /// term, in the same order (issue 32).
  std::vector<std::string> group_replicas;
  std::vector<uint64_t> group_terms;
  /// The registered extension actors that are alive.
  std::vector<observable_actor> extensions;
  /// The counters of every session that ended, added up.
  session_stats ended_sessions;
};

/// @relates router_view
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, router_view& x) {
  return f(caf::meta::type_name("router_view"), x.router, x.shards, x.groups,
           x.extensions, x.ended_sessions, x.group_owners, x.group_replicas,
           x.group_terms);
}

/// A group as the cluster's directory knows it (docs/cluster.md, "Groups
/// across nodes"): what its owner node tells every peer router, which
/// enters it in its trie and routes like a local group.
struct group_entry {
  /// The group's name.
  std::string name;
  /// Its settings, defaults filled in.
  group_settings settings;
  /// The node that owns it: the only one running its actor.
  std::string owner;
  /// The owner node's epoch (its router's start, Unix milliseconds).
  uint64_t epoch = 0;
  /// The group actor, on the owner node.
  group_actor handle;
  /// Ownership changes so far: 0 when created, +1 each time a replica
  /// takes over; between two entries of one group, the higher term wins
  /// and a lower one is refused (issue 32).
  uint64_t term = 0;
  /// The node keeping the group's replica; empty if none.
  std::string replica;
};

/// @relates group_entry
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_entry& x) {
  return f(caf::meta::type_name("group_entry"), x.name, x.settings, x.owner,
           x.epoch, x.handle, x.term, x.replica);
}

/// Directory entries in one message (a router's owned groups on peer_up).
using group_entry_list = std::vector<group_entry>;

/// The router: owns the pattern trie and the directory of topic actors.
using router_actor = caf::typed_actor<
    caf::replies_to<resolve_atom, std::vector<std::string>,
                    session_actor>::with<route_list>,
    caf::reacts_to<detach_atom, std::string, session_actor>,
    caf::replies_to<sub_atom, fanout_subscriptions>::with<caf::ok_atom>,
    caf::reacts_to<added_dest_atom, uint64_t>,
    caf::reacts_to<unsub_atom, uint64_t, session_actor>,
    caf::replies_to<join_atom, std::string, std::string, session_actor,
                    member_spec>::with<group_actor>,
    caf::replies_to<create_atom, std::string, group_settings>::with<group_info>,
    caf::replies_to<delete_atom, std::string>::with<uint64_t>,
    caf::replies_to<purge_atom, std::string>::with<uint64_t>,
    caf::replies_to<list_atom>::with<std::vector<group_info>>,
    caf::replies_to<stats_atom>::with<router_stats>,
    caf::replies_to<stats_atom, stats_query>::with<router_view>,
    caf::reacts_to<observe_atom, observable_actor>,
    caf::reacts_to<retire_atom, session_stats>,
    caf::replies_to<find_atom, std::string, std::string>::with<group_actor>,
    // Cluster (docs/cluster.md): the peer's name and its router, untyped
    // because a typed handle cannot name its own type.
    caf::replies_to<peer_up_atom, std::string, caf::actor>::with<caf::ok_atom>,
    caf::reacts_to<peer_down_atom, std::string>,
    // Fan-out across nodes: what a peer's router sends this one.
    caf::replies_to<isync_atom, interest_sync>::with<caf::ok_atom>,
    caf::replies_to<interest_atom, bool,
                    std::vector<std::string>>::with<caf::ok_atom>,
    caf::replies_to<peers_atom>::with<peer_stats_list>,
    // Groups across nodes: what a peer's router sends this one.
    caf::replies_to<gcreate_atom, std::string, group_settings,
                    bool>::with<group_entry>,
    caf::replies_to<gadd_atom, group_entry>::with<caf::ok_atom>,
    caf::replies_to<gdel_atom, std::string>::with<caf::ok_atom>,
    caf::replies_to<gsync_atom, group_entry_list>::with<caf::ok_atom>,
    // Replicas (issue 32): the owner's router asks this one to keep a
    // replica of a group (name, settings, term, owner node).
    caf::replies_to<grepl_atom, std::string, group_settings, uint64_t,
                    std::string>::with<replica_actor>,
    // The router to itself: the takeover deadline of a replicated group
    // whose owner died at this term passed (issue 32, failover).
    caf::reacts_to<replica_atom, std::string, uint64_t>,
    caf::replies_to<stats_atom, cluster_atom>::with<directory_stats>>;

/// A node's cluster actor (actors/cluster/cluster_actor.hpp): greets its
/// peers, watches them and tells the router who is up.
using cluster_actor = caf::typed_actor<
    caf::replies_to<hello_atom, cluster_hello>::with<cluster_hello>,
    caf::replies_to<cluster_atom>::with<caf::ok_atom>,
    caf::replies_to<caf::get_atom, cluster_atom>::with<cluster_view>,
    caf::reacts_to<dial_atom, std::string>, caf::reacts_to<tick_atom>>;

} // namespace tb

#include "actors/type_ids.hpp"

namespace caf {
class actor_system_config;
} // namespace caf

namespace tb {

/// Registers tinybroker's message types with an actor system config.
void add_message_types(caf::actor_system_config& cfg);

/// Wraps a tinybroker error for a CAF response.
caf::error make_caf_error(ec code, std::string text);

/// Unwraps an error from a CAF response: tinybroker's own errors keep their
/// code and text; others (a dead actor) become `ec::internal`.
error_info to_error_info(const caf::error& err);

} // namespace tb
