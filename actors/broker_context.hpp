// What every session actor needs to know about the broker it belongs to.

#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "actors/cluster/cluster_quorum.hpp"
#include "actors/protocol.hpp"
#include "config/broker_config.hpp"
#include "routing/topic.hpp"

namespace tb {

/// Issues message ids, increasing in acceptance order across the broker.
///
/// The one piece of state shared by all session actors: a lock-free counter,
/// because a round trip to an id actor per publish batch would cost a hop on
/// the hottest path. Thread-safe.
class id_sequence {
public:
  /// Reserves `count` consecutive ids and returns the first (ids start at 1).
  uint64_t reserve(uint64_t count) noexcept {
    return next_.fetch_add(count, std::memory_order_relaxed);
  }

private:
  std::atomic<uint64_t> next_{1};
};

/// Counts the group memberships whose group was lost with its owner node
/// (or replaced by a new owner), and what became of them: re-joined on the
/// next owner, or ended after 30 s or a lasting refusal (docs/cluster.md,
/// "What a client sees when a group's node dies"). Sessions count; the
/// cluster actor reads the counts into ClusterStats, as with the quorum's
/// refusals. Thread-safe; lock-free.
class rejoin_counters {
public:
  /// Counts `n` memberships that lost their group and began re-joining.
  void count_lost(uint64_t n) noexcept {
    lost_.fetch_add(n, std::memory_order_relaxed);
  }
  /// Counts one membership that re-joined its group on the next owner.
  void count_rejoined() noexcept {
    rejoined_.fetch_add(1, std::memory_order_relaxed);
  }
  /// Counts one membership that gave up re-joining and ended.
  void count_ended() noexcept {
    ended_.fetch_add(1, std::memory_order_relaxed);
  }
  /// Returns the memberships that lost their group since the start.
  uint64_t lost() const noexcept {
    return lost_.load(std::memory_order_relaxed);
  }
  /// Returns the memberships that re-joined since the start.
  uint64_t rejoined() const noexcept {
    return rejoined_.load(std::memory_order_relaxed);
  }
  /// Returns the memberships that ended re-joining since the start.
  uint64_t ended() const noexcept {
    return ended_.load(std::memory_order_relaxed);
  }

private:
  std::atomic<uint64_t> lost_{0};
  std::atomic<uint64_t> rejoined_{0};
  std::atomic<uint64_t> ended_{0};
};

/// Settings and handles shared by the session actors of one broker.
struct broker_context {
  /// The router actor.
  router_actor router;
  /// Per-session and per-message limits.
  limits_config limits;
  /// How long an unused cached route lives in a session.
  std::chrono::milliseconds route_idle_timeout{60000};
  /// The broker-wide message id counter.
  std::shared_ptr<id_sequence> ids = std::make_shared<id_sequence>();
  /// The majority rule's state: the cluster actor writes it, sessions read
  /// it before group operations (a node alone always has quorum).
  std::shared_ptr<quorum_state> quorum = std::make_shared<quorum_state>();
  /// Memberships that lost their group with its node, and their outcome.
  std::shared_ptr<rejoin_counters> rejoins =
      std::make_shared<rejoin_counters>();

  /// Returns the topic and pattern name limits.
  name_limits names() const noexcept {
    return name_limits{limits.max_topic_bytes, limits.max_topic_tokens};
  }
};

} // namespace tb
