// tinybroker's atoms: the first element of every message between actors.
// Part of the protocol (actors/protocol.hpp includes it): every atom is
// declared here and nowhere else.

#pragma once

#include <caf/atom.hpp>
#include <caf/type_id.hpp>

// -- atoms --------------------------------------------------------------------

/// Session -> router: give me the routes of these topics (creating them).
CAF_ADD_ATOM(tinybroker, tb, resolve_atom, "resolve")
/// Router -> topic shard: a session caches these routes; answer with them.
CAF_ADD_ATOM(tinybroker, tb, attach_atom, "attach")
/// Session -> router -> topic shard: a session no longer caches a route.
CAF_ADD_ATOM(tinybroker, tb, detach_atom, "detach")
/// Session -> router: add fan-out subscriptions (one Subscribe frame's, or a
/// SubscribeBatch's).
CAF_ADD_ATOM(tinybroker, tb, sub_atom, "sub")
/// Session -> router: remove a fan-out subscription.
CAF_ADD_ATOM(tinybroker, tb, unsub_atom, "unsub")
/// Router -> topic shard: route the topics each pattern matches to one more
/// subscription.
CAF_ADD_ATOM(tinybroker, tb, add_dest_atom, "add_dest")
/// Topic shard -> router: the subscriptions sent with this ticket
/// (`add_dest_atom` with a ticket) are in every route they match.
CAF_ADD_ATOM(tinybroker, tb, added_dest_atom, "added_dest")
/// Router -> topic shard: stop routing to a subscription.
CAF_ADD_ATOM(tinybroker, tb, del_dest_atom, "del_dest")
/// Topic shard -> session: a new route for a cached topic.
CAF_ADD_ATOM(tinybroker, tb, route_atom, "route")
/// Timer messages an actor sends itself.
CAF_ADD_ATOM(tinybroker, tb, tick_atom, "tick")
/// Publisher session -> subscriber session: a batch of fan-out deliveries.
CAF_ADD_ATOM(tinybroker, tb, deliver_atom, "deliver")
/// Bridge -> session: a client frame was read.
CAF_ADD_ATOM(tinybroker, tb, frame_atom, "frame")
/// Bridge -> session: the stream can take the next frame.
CAF_ADD_ATOM(tinybroker, tb, writable_atom, "writable")
/// Bridge -> session: the client stopped sending or the stream ended.
CAF_ADD_ATOM(tinybroker, tb, closed_atom, "closed")
/// Service -> publisher session: a unary Publish call.
CAF_ADD_ATOM(tinybroker, tb, unary_atom, "unary")
/// Anyone -> actor: report your counters.
CAF_ADD_ATOM(tinybroker, tb, stats_atom, "stats")

/// Publisher session -> group: hold these messages.
CAF_ADD_ATOM(tinybroker, tb, enqueue_atom, "enqueue")
/// Session -> router -> group: add a member.
CAF_ADD_ATOM(tinybroker, tb, join_atom, "join")
/// Session -> group: a member unsubscribed (it may still answer).
CAF_ADD_ATOM(tinybroker, tb, leave_atom, "leave")
/// Session -> group: these deliveries are done.
CAF_ADD_ATOM(tinybroker, tb, ack_atom, "ack")
/// Session -> group: redeliver these (after a delay).
CAF_ADD_ATOM(tinybroker, tb, nack_atom, "nack")
/// Session -> group: dead-letter these at once.
CAF_ADD_ATOM(tinybroker, tb, reject_atom, "reject")
/// Session -> group: still working on these; push their deadlines back.
CAF_ADD_ATOM(tinybroker, tb, progress_atom, "progress")
/// Group -> session: these deliveries went to another attempt.
CAF_ADD_ATOM(tinybroker, tb, expired_atom, "expired")
/// Group -> session: deliveries for group members.
CAF_ADD_ATOM(tinybroker, tb, gdeliver_atom, "gdeliver")
/// Ending session -> router: my final counters, for the broker totals.
CAF_ADD_ATOM(tinybroker, tb, retire_atom, "retire")
/// Extension actor -> router: list me in the Stats view.
CAF_ADD_ATOM(tinybroker, tb, observe_atom, "observe")
/// Group -> session: your membership ended (the group was deleted).
CAF_ADD_ATOM(tinybroker, tb, kicked_atom, "kicked")
/// Timer of a session: re-join a group whose node was lost (subscription id,
/// attempt); group -> session: re-join me, another owner replaced me
/// (the group's address).
CAF_ADD_ATOM(tinybroker, tb, rejoin_atom, "rejoin")
/// Service -> router: create a group.
CAF_ADD_ATOM(tinybroker, tb, create_atom, "create")
/// Service -> router -> group: delete a group.
CAF_ADD_ATOM(tinybroker, tb, delete_atom, "delete")
/// Router -> group, with `delete`: another node's group of that name
/// replaced it (its members re-join, they are not told it was deleted).
CAF_ADD_ATOM(tinybroker, tb, replaced_atom, "replaced")
/// Service -> router -> group: drop a group's pending messages (those not in
/// flight); answered with how many it dropped.
CAF_ADD_ATOM(tinybroker, tb, purge_atom, "purge")
/// Service -> router: list the groups.
CAF_ADD_ATOM(tinybroker, tb, list_atom, "list")
/// Group -> publisher session: publish this dead letter.
CAF_ADD_ATOM(tinybroker, tb, dlq_atom, "dlq")
/// Router -> topic shard: route the topics a pattern matches to a group.
CAF_ADD_ATOM(tinybroker, tb, add_group_atom, "add_group")
/// Router -> topic shard: stop routing to a group.
CAF_ADD_ATOM(tinybroker, tb, del_group_atom, "del_group")
/// Timer of an actor's rate-limited log lines: report what was suppressed.
CAF_ADD_ATOM(tinybroker, tb, log_tick_atom, "log_tick")
/// gRPC side -> log actor: a call or stream was refused (net/log_actor.hpp).
CAF_ADD_ATOM(tinybroker, tb, refused_atom, "refused")
/// gRPC side -> session: its token's permissions changed (a reload).
CAF_ADD_ATOM(tinybroker, tb, auth_atom, "auth")
/// Publisher session -> topic shard: hold these delayed fan-out messages.
CAF_ADD_ATOM(tinybroker, tb, schedule_atom, "schedule")
/// Topic shard -> itself: delayed fan-out messages fall due.
CAF_ADD_ATOM(tinybroker, tb, due_atom, "due")

/// Caller session -> group: hold this request as one delivery.
CAF_ADD_ATOM(tinybroker, tb, request_atom, "request")
/// Caller session -> responder session: a request for a subscription.
CAF_ADD_ATOM(tinybroker, tb, rdeliver_atom, "rdeliver")
/// Responder session -> caller session: the reply to a request.
CAF_ADD_ATOM(tinybroker, tb, reply_atom, "reply")
/// Session -> itself: a request's timeout may have passed.
CAF_ADD_ATOM(tinybroker, tb, rtimeout_atom, "rtimeout")
/// Caller session -> router: the group that answers a request to a topic.
CAF_ADD_ATOM(tinybroker, tb, find_atom, "find")
/// Service -> unary session: a unary Request call.
CAF_ADD_ATOM(tinybroker, tb, unary_req_atom, "unary_req")
/// Session -> topic shard: which of these messages' ids were seen already?
CAF_ADD_ATOM(tinybroker, tb, dedup_atom, "dedup")
/// Timer of a topic shard: forget the message ids whose window ended.
CAF_ADD_ATOM(tinybroker, tb, dedup_tick_atom, "dedup_tick")

// -- cluster ------------------------------------------------------------------

/// Cluster actor -> router: a peer node is connected; sync interest with its
/// router (answered once the first sync is done, so the node can say ready).
CAF_ADD_ATOM(tinybroker, tb, peer_up_atom, "peer_up")
/// Cluster actor -> router: a peer node is gone; drop what it was interested
/// in and fail what waits on it.
CAF_ADD_ATOM(tinybroker, tb, peer_down_atom, "peer_down")
/// Cluster actor -> a peer's cluster actor: greeting (name, version, epoch,
/// node id, router); answered with the peer's own greeting or refused.
CAF_ADD_ATOM(tinybroker, tb, hello_atom, "hello")
/// Server or stats -> cluster actor: ready once every reachable peer synced;
/// with get_atom: describe the cluster.
CAF_ADD_ATOM(tinybroker, tb, cluster_atom, "cluster")
/// Timer of the cluster actor: dial a peer's address (again).
CAF_ADD_ATOM(tinybroker, tb, dial_atom, "dial")

// -- fan-out across nodes (actors/cluster_types.hpp) --------------------------

/// Session -> link_out: one publish frame's messages for a peer; link_out ->
/// link_in: a network batch.
CAF_ADD_ATOM(tinybroker, tb, link_atom, "link")
/// Link_in -> link_out: batches up to this one were delivered.
CAF_ADD_ATOM(tinybroker, tb, link_ack_atom, "link_ack")
/// Router -> peer router: patterns whose local count went 0->1 (true) or
/// back to 0 (false).
CAF_ADD_ATOM(tinybroker, tb, interest_atom, "interest")
/// Router -> peer router: one chunk of its full interest (on peer_up).
CAF_ADD_ATOM(tinybroker, tb, isync_atom, "isync")
/// Router -> topic shard: route the topics these patterns match to a link.
CAF_ADD_ATOM(tinybroker, tb, add_link_atom, "add_link")
/// Router -> topic shard: these patterns no longer route to a link.
CAF_ADD_ATOM(tinybroker, tb, del_link_atom, "del_link")
/// Router -> topic shard: a peer is gone; no topic routes to its link.
CAF_ADD_ATOM(tinybroker, tb, drop_link_atom, "drop_link")
/// Link_in -> its delivery session: messages from a peer, for local
/// fan-out subscribers only.
CAF_ADD_ATOM(tinybroker, tb, remote_atom, "remote")
/// Anyone -> router: the counters of every peer.
CAF_ADD_ATOM(tinybroker, tb, peers_atom, "peers")

// -- groups across nodes (actors/router/router_directory.cpp) -----------------

/// Router -> the owner node's router: create this group here (its HRW
/// owner), or answer the one the directory holds; answered with the entry
/// once every live peer applied it.
CAF_ADD_ATOM(tinybroker, tb, gcreate_atom, "gcreate")
/// Owner router -> peer router: a group it owns (a directory entry); enter
/// it in the trie and the routes like a local group.
CAF_ADD_ATOM(tinybroker, tb, gadd_atom, "gadd")
/// Owner router -> peer router: the group it owned by this name is gone.
CAF_ADD_ATOM(tinybroker, tb, gdel_atom, "gdel")
/// Router -> peer router: every group it owns (on peer_up, part of the
/// first sync).
CAF_ADD_ATOM(tinybroker, tb, gsync_atom, "gsync")

// -- replicas (actors/replica_types.hpp, issue 32) ----------------------------

/// Router -> owner group: this replica keeps your copy (null: none), at
/// this ownership term.
CAF_ADD_ATOM(tinybroker, tb, replica_atom, "replica")
/// Owner group -> replica: one chunk of its full state.
CAF_ADD_ATOM(tinybroker, tb, rsnap_atom, "rsnap")
/// Owner group -> replica: a batch the owner accepted.
CAF_ADD_ATOM(tinybroker, tb, rhold_atom, "rhold")
/// Owner group -> replica: messages delivered, returned or removed.
CAF_ADD_ATOM(tinybroker, tb, rchange_atom, "rchange")
/// Owner group -> replica: the group's new settings.
CAF_ADD_ATOM(tinybroker, tb, rsettings_atom, "rsettings")
/// Replica -> owner group: everything up to this sequence number applied.
CAF_ADD_ATOM(tinybroker, tb, rack_atom, "rack")
/// Router -> replica: hand over your state and quit (the owner died).
CAF_ADD_ATOM(tinybroker, tb, promote_atom, "promote")
/// Owner router -> replica node's router: keep a replica of this group.
CAF_ADD_ATOM(tinybroker, tb, grepl_atom, "grepl")
