// The Stats reply made from what the collector (net/stats_collector.hpp)
// gathered: the broker totals over every session, publisher and group, and
// the lists, filtered, sorted and cut to the call's limit.

#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "net/stats_collector.hpp"

namespace tb {

/// What the collector gathered from the actors for one Stats call.
struct stats_gathering {
  /// The call's request.
  tinybroker::v1::StatsRequest request;
  /// The most entries of each list (the request's limit, bounded).
  uint32_t limit = default_stats_limit;
  /// What the collector reads besides the actors.
  stats_sources sources;
  /// Where the reply goes.
  stats_callback done;
  /// The router's counters and the actors it names.
  router_view view;
  /// The topics the shards listed (each its first `limit` by name).
  std::vector<topic_stats> topics;
  /// The groups that answered.
  std::vector<group_info> groups;
  /// The live sessions that answered, with their counters.
  std::vector<std::pair<session_actor, session_stats>> sessions;
  /// The unary publishers' counters.
  std::vector<session_stats> publishers;
  /// The extension actors that answered.
  std::vector<std::pair<caf::actor_id, actor_stats>> extensions;
  /// Topics matching the request's pattern, over every shard.
  uint64_t topics_matched = 0;
  /// De-duplication over every shard: duplicates, ids remembered, evicted.
  uint64_t duplicates = 0;
  /// See `duplicates`.
  uint64_t dedup_ids = 0;
  /// See `duplicates`.
  uint64_t dedup_evicted = 0;
  /// The shards' actor ids and mailboxes, in shard order.
  std::vector<std::pair<caf::actor_id, uint64_t>> shards;
  /// The shards' delayed fan-out messages, added up (the earliest due time).
  shard_view delayed;
  /// Each group's actor id and name, for the actor list.
  std::vector<std::pair<caf::actor_id, std::string>> group_ids;
  /// Answers still awaited.
  size_t outstanding = 0;
};

/// Fills `reply` from `g`: totals, then the lists. Sorts and cuts `g`'s
/// lists in place.
void fill_stats_reply(stats_gathering& g, tinybroker::v1::StatsReply& reply);

} // namespace tb
