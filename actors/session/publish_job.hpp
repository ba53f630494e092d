// A batch of published messages on its way through a session (see
// actors/session/session_actor.hpp and session_publish.cpp): validated, given
// ids, checked for duplicates, waiting for routes, then answered.

#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/typed_response_promise.hpp>

#include "actors/protocol.hpp"
#include "actors/topic/dedup_table.hpp"

namespace tb {

/// The outcome of one published message.
struct publish_outcome {
  /// The message id, 0 if refused.
  uint64_t id = 0;
  /// Why the message was refused, if it was.
  error_info error;
  /// True if its msg_id was seen on its topic within the window: routed
  /// nowhere, and `id` is the first message's.
  bool duplicate = false;
};

/// A batch of messages on its way through a session: validated, given ids
/// and waiting for routes.
struct publish_job {
  /// The request_id of the publish frame (stream publishes).
  uint64_t request_id = 0;
  /// True if the client asked for a confirm frame.
  bool confirm = false;
  /// Set for unary Publish calls, answered when routed.
  unary_call_ptr unary;
  /// The accepted messages, in publish order.
  std::vector<message_ref> accepted;
  /// For each accepted message, the index of its outcome.
  std::vector<uint32_t> positions;
  /// One outcome per published message, in publish order.
  std::vector<publish_outcome> outcomes;
  /// Routes resolved for this job (in case the cache evicts them early).
  std::unordered_map<std::string, route_ref> resolved;
  /// Why a topic's route lookup failed, by topic (e.g. limits.max_topics).
  std::unordered_map<std::string, error_info> lookup_errors;
  /// Route lookups still outstanding.
  size_t pending_lookups = 0;
  /// Groups that have not answered yet whether they hold the messages.
  size_t pending_groups = 0;
  /// The accepted messages with a msg_id: their index in `accepted` and
  /// the key of topic and msg_id.
  std::vector<std::pair<uint32_t, dedup_key>> dedup;
  /// Where in `dedup` each run of messages to one topic starts, ascending:
  /// the session looks up the route and the shard once per run.
  std::vector<uint32_t> dedup_runs;
  /// Topic shards that have not answered yet which ids are duplicates.
  size_t pending_dedup = 0;
  /// True once every shard answered (or none was asked).
  bool dedup_done = false;
  /// True for messages a peer node sent through a link: routed to local
  /// fan-out subscribers only (no link, no group), answered through
  /// `link_done` instead of a confirm.
  bool from_link = false;
  /// Answers the link's inbound actor once routed (`from_link` only).
  caf::typed_response_promise<caf::ok_atom> link_done;
};

} // namespace tb
