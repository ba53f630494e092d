// Where a publish batch goes besides the fan-out subscribers it reaches at
// once: the groups that hold its messages and, for delayed messages, the
// topic shards that hold them for their fan-out subscribers (issue 29).

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/session/session_actor.hpp"

namespace tb {

/// The messages one publish batch routes to one group, with their positions
/// among the job's accepted messages.
struct group_share {
  /// The group.
  group_actor group;
  /// Its messages, in publish order.
  std::vector<message_ref> messages;
  /// Their positions among the job's accepted messages.
  std::vector<uint32_t> positions;
};

/// The delayed messages of one publish batch for one topic shard, with
/// their positions among the job's accepted messages.
struct delayed_share {
  /// The topic shard that holds them until their due time.
  caf::actor_addr shard;
  /// The messages, with the routes they were published on.
  delayed_batch batch;
  /// Their positions among the job's accepted messages.
  std::vector<uint32_t> positions;
};

/// Asks each group to hold its share and each topic shard to hold its
/// delayed messages; a refusal (a full group, a limit of delayed messages)
/// marks the message's outcome. Confirms once every destination answered.
void enqueue_later(session_pointer self, std::shared_ptr<publish_job> job,
                   std::vector<group_share> shares,
                   std::vector<delayed_share> delayed);

/// Adds `msg` (at position `k`) to the delayed share of its route's shard.
void add_delayed(std::vector<delayed_share>& delayed, const route_ref& route,
                 const message_ref& msg, size_t k);

/// Adds `msg` to the share of every link of `route` (a peer node
/// interested in its topic), in publish order.
void add_link_share(
    std::vector<std::pair<link_out_actor, std::vector<message_ref>>>& links,
    const route& route, const message_ref& msg);

} // namespace tb
