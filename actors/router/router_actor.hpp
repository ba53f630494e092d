// The router: owns the pattern trie and the topic shards.
//
// Wildcards are resolved when a topic or a subscription appears, never per
// message: a new topic starts with the subscriptions the trie matches, and a
// new subscription is added to every existing topic it matches (each shard
// finds its own through a topic trie, not a scan). A subscribe is answered
// only after every affected shard has updated the route caches of its
// publishers, so every message accepted after the confirm reaches the new
// subscription.
//
//   session --sub--> router --add_dest--> shard --route--> publisher sessions
//        <---ok-----       <----ok-------       <---ok----
//
// A topic belongs to the shard its name hashes to. A literal pattern goes to
// that shard only; a wildcard pattern goes to every shard.

#pragma once

#include <map>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <caf/stateful_actor.hpp>

#include "actors/broker_context.hpp"
#include "actors/group/group_actor.hpp"
#include "actors/protocol.hpp"
#include "actors/router/router_types.hpp"
#include "actors/topic/topic_shard.hpp"
#include "routing/sublist.hpp"

namespace tb {

/// State of the router actor.
struct router_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.router";

  /// Subscription keys by pattern.
  sublist patterns;
  /// Subscriptions by key.
  std::unordered_map<uint64_t, router_subscription> subscriptions;
  /// Subscription keys by session and subscription id.
  std::unordered_map<caf::actor_addr, std::unordered_map<uint64_t, uint64_t>>
      keys_by_session;
  /// The topic shards; a topic belongs to `shards[hash(name) % size]`.
  std::vector<topic_shard_actor> shards;
  /// The live topics of all shards, against limits.max_topics.
  std::shared_ptr<topic_quota> quota;
  /// Topic shards, groups and the dead letter publisher linked to the router
  /// whose exit message is due.
  std::unordered_set<caf::actor_addr> linked_children;
  /// Consumer groups by name.
  std::unordered_map<std::string, router_group> groups;
  /// Group names by actor, to tell a stale down message from a live group.
  std::unordered_map<caf::actor_addr, std::string> group_names;
  /// What every group is started with.
  group_context group_ctx;
  /// Whether joining an unknown group creates it.
  bool auto_create_groups = true;
  /// Settings of auto-created groups.
  group_settings group_defaults;
  /// Limits of topic and pattern names.
  name_limits names;
  /// The most groups (`limits.max_groups`).
  std::size_t max_groups = SIZE_MAX;
  /// The next subscription key.
  uint64_t next_key = 1;
  /// Subscribe batches sent to a shard and not yet in place, by ticket
  /// (`added_dest_atom`): the shard and what its answer completes.
  std::unordered_map<uint64_t,
                     std::pair<caf::actor_addr, std::function<void()>>>
      dest_waits;
  /// The next of those tickets.
  uint64_t next_dest_ticket = 1;
  /// The counters of every session that ended (buffers are 0 by then).
  session_stats ended_sessions;
  /// Extension actors listed in the Stats view, by address.
  std::unordered_map<caf::actor_addr, observable_actor> extensions;
  // -- cluster (actors/router/router_peers.cpp) ------------------------------
  /// The number of local fan-out subscriptions per pattern: a pattern's
  /// 0->1 and ->0 are told to every peer.
  std::unordered_map<std::string, uint32_t> interest;
  /// The peer nodes by their router's address.
  std::unordered_map<caf::actor_addr, router_peer> peers;
  /// Their router's address by node name.
  std::unordered_map<std::string, caf::actor_addr> peer_names;
  /// Messages lost with each peer by node name: what its link held when
  /// it went down, summed over its downs (kept while it is down).
  std::map<std::string, uint64_t> peer_lost;
  /// Trie entries that stand for a peer's interest (not subscriptions).
  uint64_t peer_keys = 0;
  /// The bounds of links to peers.
  link_settings links;
  /// The most patterns in one `isync` chunk.
  std::size_t interest_chunk = 1024;
  /// The context of the links' delivery sessions.
  broker_context session_ctx;
  /// Interest sync chunks received from peers.
  uint64_t sync_chunks_received = 0;
  /// Interest changes (RS+/RS-) received from peers.
  uint64_t interest_changes_received = 0;
  // -- groups across nodes (actors/router/router_directory.cpp) --------------
  /// This node's name; empty on a node alone.
  std::string node_name;
  /// This node's epoch, Unix milliseconds.
  uint64_t node_epoch = 0;
  /// Requests to a peer node's actors (its router, its groups) that CAF
  /// 0.17 would never complete if the node died, by that node's router:
  /// each is failed with node_unavailable when the node goes down.
  std::unordered_map<caf::actor_addr,
                     std::unordered_map<uint64_t, pending_request>>
      pending;
  /// The number of the next pending request.
  uint64_t next_pending = 1;
  /// Groups dropped because their owner node went down.
  uint64_t groups_lost = 0;
  /// Two owners of one name resolved (the lower HRW rank's group dropped).
  uint64_t group_conflicts = 0;
  /// The config groups, re-created here when this node becomes their owner.
  std::vector<std::pair<std::string, group_settings>> config_groups;
  // -- replicas (actors/router/router_replicas.cpp, issue 32) ----------------
  /// The replicas this node keeps, by group name.
  std::unordered_map<std::string, held_replica> replicas;
  /// Their group names by replica actor, for their down messages.
  std::unordered_map<caf::actor_addr, std::string> replica_names;
  /// Replicas this node promoted to owner, since the start.
  uint64_t promotions = 0;
  /// Directory entries refused for a lower term than the one held.
  uint64_t stale_entries_refused = 0;
  /// Groups whose stale entries were logged (each logged once).
  std::unordered_set<std::string> stale_logged;
  /// How long a replicated group whose owner died stays in the routes
  /// without a new owner.
  std::chrono::milliseconds takeover_timeout{3000};
};

/// The router's handle type with its state.
using router_pointer = router_actor::stateful_pointer<router_state>;

/// Runs the router.
router_actor::behavior_type router_actor_impl(router_pointer self,
                                              router_settings settings);

// -- internals shared by the router's source files ----------------------------

/// Adds fan-out subscriptions and answers once every shard that may hold a
/// matching topic put them in place (actors/router/router_subscriptions.cpp).
caf::result<caf::ok_atom> subscribe(router_pointer self,
                                    fanout_subscriptions subscriptions);

/// Completes the subscribe batch a shard answered with `ticket`.
void dest_added(router_pointer self, uint64_t ticket);

/// Completes every subscribe batch sent to `shard`, which ended.
void answer_dest_waits(router_state& st, const caf::actor_addr& shard);

/// Removes one subscription from the trie and from every matching topic.
void unsubscribe(router_pointer self, const caf::actor_addr& session,
                 uint64_t subscription_id);

/// Drops every subscription of a session that ended.
void forget_session(router_pointer self, const caf::actor_addr& session);

/// Returns the index in `st.shards` of the shard that holds `topic`.
std::size_t shard_index(const router_state& st, std::string_view topic);

/// Returns the shard that holds `topic`.
const topic_shard_actor& shard_of(const router_state& st,
                                  std::string_view topic);

/// Returns the shards that may hold topics `pattern` matches: the one of a
/// literal pattern, all for a wildcard.
std::vector<topic_shard_actor> shards_for(const router_state& st,
                                          const std::string& pattern);

/// Asks each shard for `pattern` to handle `(atom, pattern, args...)` and
/// calls `done()` once all answered (a failed shard counts as answered).
template <class Atom, class... Args>
void request_shards(router_pointer self, const std::string& pattern,
                    std::function<void()> done, Atom atom,
                    const Args&... args) {
  auto shards = shards_for(self->state, pattern);
  auto remaining = std::make_shared<std::size_t>(shards.size());
  auto count_down = [done = std::move(done), remaining] {
    if (--*remaining == 0)
      done();
  };
  for (auto& shard : shards)
    self->request(shard, caf::infinite, atom, pattern, args...)
        .then([count_down](caf::ok_atom) { count_down(); },
              [count_down](caf::error&) { count_down(); });
}

/// Creates a group, or answers with the existing one if identical.
caf::result<group_info> create_group(router_pointer self, std::string name,
                                     group_settings settings);

/// Adds a member to a group, creating the group if allowed.
caf::result<group_actor> join_group(router_pointer self, std::string name,
                                    std::string pattern, session_actor session,
                                    member_spec spec);

/// Deletes a group; answers with how many messages it dropped.
caf::result<uint64_t> delete_group(router_pointer self,
                                   const std::string& name);

/// Drops a group's pending messages (not those in flight); answers with how
/// many it dropped, or NOT_FOUND for an unknown group.
caf::result<uint64_t> purge_group(router_pointer self, const std::string& name);

/// Answers with every group's info, sorted by name.
caf::result<std::vector<group_info>> list_groups(router_pointer self);

/// Returns the group `name` for a request to `topic`: NO_RESPONDERS when
/// there is no such group, INVALID_ARGUMENT when its pattern does not match
/// the topic.
caf::result<group_actor> find_group(router_pointer self,
                                    const std::string& name,
                                    const std::string& topic);

/// Returns the router's own counters.
router_stats current_router_stats(router_pointer self);

/// Answers a Stats query: the router's counters, the matching topics (the
/// first `limit` by name), every group and every extension actor.
caf::result<router_view> describe_router(router_pointer self,
                                         const stats_query& query);

/// Lists `actor` in the Stats view until it exits.
void observe_extension(router_pointer self, observable_actor actor);

/// A peer node connected (cluster): syncs interest with its router and
/// answers once the first sync is done. One node alone never gets it.
caf::result<caf::ok_atom> peer_connected(router_pointer self, std::string name,
                                         caf::actor peer_router);

/// A peer node is gone (cluster): drops what it was interested in.
void peer_disconnected(router_pointer self, const std::string& name);

/// Applies one chunk of a peer router's full interest (the sender).
caf::result<caf::ok_atom> take_interest_sync(router_pointer self,
                                             interest_sync& chunk);

/// Applies a peer router's interest change (the sender): `add` true for
/// patterns that went 0->1 there, false for ->0.
caf::result<caf::ok_atom>
take_interest_change(router_pointer self, bool add,
                     const std::vector<std::string>& patterns);

/// Tells every synced peer that `patterns` went 0->1 (`add`) or ->0 here;
/// calls `on_applied()` once per peer when it applied them (or went away).
/// Returns the number of peers told.
std::size_t announce_interest(router_pointer self, bool add,
                              const std::vector<std::string>& patterns,
                              const std::function<void()>& on_applied);

/// Counts a local fan-out subscription of `pattern`; true if it is the first.
bool count_interest(router_state& st, const std::string& pattern);

/// Counts a local fan-out subscription of `pattern` less; true if it was the
/// last.
bool uncount_interest(router_state& st, const std::string& pattern);

/// Drops a peer whose router is `addr`: its interest, its links, and every
/// wait on it (its node is gone).
void drop_peer(router_pointer self, const caf::actor_addr& addr);

/// Answers the counters of every peer.
caf::result<peer_stats_list> describe_peers(router_pointer self);

/// Forgets a group that stopped or died: out of the trie and every topic
/// (a group this node owns: every peer is told). With `replaced_in_routes`
/// the topics keep it: the caller adds its successor in its place in one
/// route version (`add_group` naming it), so that no publish in between
/// finds the topic without the group and is confirmed into nothing.
void forget_group(router_pointer self, const caf::actor_addr& addr,
                  bool replaced_in_routes = false);

/// Returns the peer entry of the router that sent the current message,
/// making one (and monitoring that router) on first sight.
std::pair<caf::actor_addr, router_peer*> peer_of_sender(router_pointer self);

/// Calls and forgets the wait `id` on the peer `addr`, if both still exist.
void peer_applied(router_pointer self, const caf::actor_addr& addr,
                  uint64_t id);

/// Answers the peer's pending `peer_up` requests once both its interest
/// and its groups are applied here.
void peer_maybe_ready(router_peer& peer);

} // namespace tb
