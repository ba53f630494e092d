// What the actors report when asked for their counters (spec 11). Included
// by actors/protocol.hpp, which registers their type IDs. Every counter is
// kept inside the actor it describes; the Stats collector (net/) adds them
// up on request.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "actors/meters.hpp"
#include "actors/request_types.hpp"

namespace tb {

/// Returns how many messages actor `self` has waiting in its mailbox's
/// queues: an approximation that leaves out messages not yet moved from the
/// inbox's lock-free stack. Call only from the actor itself.
///
/// Not `mailbox().size()`: that moves messages from the stack into the
/// queues, which from inside a message handler disturbs the round CAF is in
/// (UBSan reports it in CAF's task_queue, and the broker halts).
template <class Self>
uint64_t mailbox_length(Self* self) {
  return static_cast<uint64_t>(self->mailbox().queue().total_task_size());
}

/// Counters a topic actor reports.
struct topic_stats {
  /// The topic's name.
  std::string name;
  /// Fan-out subscriptions it routes to.
  uint64_t destinations = 0;
  /// Sessions that cache its route (its publishers).
  uint64_t cachers = 0;
  /// Groups it routes to.
  uint64_t groups = 0;
  /// Messages waiting in its shard's mailbox.
  uint64_t mailbox = 0;
};

/// @relates topic_stats
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, topic_stats& x) {
  return f(caf::meta::type_name("topic_stats"), x.name, x.destinations,
           x.cachers, x.groups, x.mailbox);
}

/// Counters the router reports.
struct router_stats {
  /// Live topics, over all topic shards.
  uint64_t topics = 0;
  /// Live subscriptions in the pattern trie: each fan-out subscription and
  /// each group (once, however many members it has).
  uint64_t subscriptions = 0;
  /// Of those, the fan-out subscriptions.
  uint64_t fanout_subscriptions = 0;
  /// Sessions the router monitors.
  uint64_t sessions = 0;
  /// Consumer groups.
  uint64_t groups = 0;
  /// Messages waiting in its mailbox.
  uint64_t mailbox = 0;
};

/// @relates router_stats
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, router_stats& x) {
  return f(caf::meta::type_name("router_stats"), x.topics, x.subscriptions,
           x.fanout_subscriptions, x.sessions, x.groups, x.mailbox);
}

/// Counters a session actor reports.
struct session_stats {
  /// Messages accepted from this session.
  uint64_t published = 0;
  /// Accepted messages that matched nothing.
  uint64_t unrouted = 0;
  /// Deliveries written to the client.
  uint64_t delivered = 0;
  /// Fan-out messages lost because the client was too slow.
  uint64_t dropped = 0;
  /// Live subscriptions.
  uint64_t subscriptions = 0;
  /// Topics whose routes are cached.
  uint64_t cached_routes = 0;
  /// Deliveries buffered and not yet written.
  uint64_t buffered = 0;
  /// Answers to unknown or already answered group deliveries.
  uint64_t stale_answers = 0;
  /// Refused requests and refused messages of publishes.
  uint64_t refused = 0;
  /// Of those, the ones its token's permissions refused.
  uint64_t denied = 0;
  /// Payload bytes of the buffered deliveries.
  uint64_t buffered_bytes = 0;
  /// The client's address (empty for the broker's own publishers).
  std::string peer;
  /// The name of the client's token (empty with auth off).
  std::string token;
  /// The name the client chose for itself (empty if none).
  std::string client_name;
  /// Milliseconds since the session started.
  uint64_t connected_ms = 0;
  /// Messages waiting in its mailbox.
  uint64_t mailbox = 0;
  /// Latency from acceptance to the write of each delivery.
  latency_histogram delivery_latency;
  /// Fan-out messages dropped unwritten because their TTL passed while
  /// they waited in the buffer.
  uint64_t expired = 0;
  /// Request/reply counters.
  request_stats requests;
};

/// @relates session_stats
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_stats& x) {
  return f(caf::meta::type_name("session_stats"), x.published, x.unrouted,
           x.delivered, x.dropped, x.subscriptions, x.cached_routes, x.buffered,
           x.stale_answers, x.refused, x.denied, x.buffered_bytes, x.peer,
           x.token, x.client_name, x.connected_ms, x.mailbox,
           x.delivery_latency, x.expired, x.requests);
}

/// Adds the counters of `x` (published, unrouted, delivered, dropped,
/// refused, buffered, stale answers, latencies) to `total`; gauges that do
/// not add up across sessions (subscriptions, peer, age) are left alone.
inline void accumulate(session_stats& total, const session_stats& x) {
  total.published += x.published;
  total.unrouted += x.unrouted;
  total.delivered += x.delivered;
  total.dropped += x.dropped;
  total.refused += x.refused;
  total.denied += x.denied;
  total.buffered += x.buffered;
  total.buffered_bytes += x.buffered_bytes;
  total.stale_answers += x.stale_answers;
  total.expired += x.expired;
  total.delivery_latency.merge(x.delivery_latency);
  accumulate(total.requests, x.requests);
}

/// An actor that is not one of the broker's own kinds (a user's extension
/// of routing) as it describes itself to the Stats view.
struct actor_stats {
  /// What it is, in the user's words ("audit-tap", "rate-limiter", ...).
  std::string kind;
  /// Which one it is.
  std::string name;
  /// Messages waiting in its mailbox.
  uint64_t mailbox = 0;
};

/// @relates actor_stats
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, actor_stats& x) {
  return f(caf::meta::type_name("actor_stats"), x.kind, x.name, x.mailbox);
}

/// What the Stats collector asks the router for.
struct stats_query {
  /// Topics to list: those matching this pattern; empty lists none.
  std::string topic_pattern;
  /// The most topics to list (the first by name).
  uint32_t limit = 100;
};

/// @relates stats_query
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stats_query& x) {
  return f(caf::meta::type_name("stats_query"), x.topic_pattern, x.limit);
}

/// A topic shard's answer to a Stats query.
struct shard_view {
  /// The shard's topics matching the query's pattern, the first `limit` by
  /// name.
  std::vector<topic_stats> topics;
  /// How many of its live topics match the pattern.
  uint64_t matched = 0;
  /// Its live topics.
  uint64_t live = 0;
  /// Messages waiting in its mailbox.
  uint64_t mailbox = 0;
  /// Delayed fan-out messages it holds until their due time.
  uint64_t scheduled = 0;
  /// Delayed fan-out messages that fell due and went to their subscribers.
  uint64_t scheduled_fired = 0;
  /// Delayed fan-out messages refused at a limit.
  uint64_t scheduled_refused = 0;
  /// When its earliest delayed message falls due, in milliseconds since the
  /// Unix epoch; 0 when it holds none.
  int64_t next_due_unix_ms = 0;
  /// Messages it found to be duplicates (a msg_id seen within the window).
  uint64_t duplicates = 0;
  /// Message ids it remembers now.
  uint64_t dedup_ids = 0;
  /// Message ids it forgot before their window ended (its table was full).
  uint64_t dedup_evicted = 0;
};

/// @relates shard_view
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_view& x) {
  return f(caf::meta::type_name("shard_view"), x.topics, x.matched, x.live,
           x.mailbox, x.scheduled, x.scheduled_fired, x.scheduled_refused,
           x.next_due_unix_ms, x.duplicates, x.dedup_ids, x.dedup_evicted);
}

} // namespace tb
