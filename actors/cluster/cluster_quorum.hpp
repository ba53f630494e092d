// The majority rule (issue 32 point 3, docs/cluster.md "Majority rule"): a
// node that sees fewer than a majority of the configured nodes refuses
// group operations and serves fan-out locally, so that two sides of a
// partition never both run the same group.
//
// The cluster actor counts the nodes it sees and writes the count here;
// every session reads it on its publish, join and ack paths. A shared
// atomic, as `id_sequence` is: a round trip to the cluster actor per
// publish would cost a hop on the hottest path.
//
//   cluster actor --set(visible, configured)--> quorum_state <--read-- sessions

#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "config/cluster_config.hpp"

namespace tb {

/// The longest pause before a node without quorum redials a configured
/// peer (instead of the backoff's 2 s): it serves no group until it sees a
/// majority again, so it looks for one promptly.
inline constexpr std::chrono::milliseconds quorum_redial_backoff{250};

/// Returns how many of `configured` nodes make a majority: more than half.
constexpr uint32_t quorum_majority(uint32_t configured) noexcept {
  return configured / 2 + 1;
}

/// Returns true if a node that sees `visible` of `configured` nodes (itself
/// included) has quorum under `rule`; one configured node always has.
constexpr bool quorum_reached(uint32_t visible, uint32_t configured,
                              quorum_rule rule) noexcept {
  return rule == quorum_rule::none || configured <= 1 ||
         visible >= quorum_majority(configured);
}

/// One reading of the quorum: the counts and the verdict, taken together.
struct quorum_reading {
  /// The nodes this node sees, itself included (greeted and not down).
  uint32_t visible = 1;
  /// The configured nodes: this node and its `[cluster] peers`.
  uint32_t configured = 1;
  /// True if the rule lets this node run group operations.
  bool has_quorum = true;

  /// Says what the node sees, e.g. "this node sees 1 of 3 configured nodes
  /// (needs 2)".
  std::string describe() const {
    return "this node sees " + std::to_string(visible) + " of " +
           std::to_string(configured) + " configured nodes (needs " +
           std::to_string(quorum_majority(configured)) + ")";
  }
};

/// The quorum as the cluster actor last counted it, shared with every
/// session of the broker. Thread-safe; lock-free.
class quorum_state {
public:
  /// Records that this node sees `visible` of `configured` nodes under
  /// `rule`; returns the reading. Only the cluster actor calls it.
  quorum_reading set(uint32_t visible, uint32_t configured,
                     quorum_rule rule) noexcept {
    quorum_reading r{visible, configured,
                     quorum_reached(visible, configured, rule)};
    word_.store(pack(r), std::memory_order_release);
    return r;
  }

  /// Returns the last reading (a node alone: 1 of 1, quorum).
  quorum_reading read() const noexcept {
    auto w = word_.load(std::memory_order_acquire);
    return quorum_reading{static_cast<uint32_t>(w & 0x7fffffffu),
                          static_cast<uint32_t>((w >> 32) & 0x7fffffffu),
                          (w & has_bit) != 0};
  }

  /// Returns true if group operations may run: the hot path's one load.
  bool has_quorum() const noexcept {
    return (word_.load(std::memory_order_acquire) & has_bit) != 0;
  }

  /// Counts one refused operation (ClusterStats quorum_refusals).
  void count_refusal() noexcept {
    refusals_.fetch_add(1, std::memory_order_relaxed);
  }

  /// Returns the operations refused for want of quorum since the start.
  uint64_t refusals() const noexcept {
    return refusals_.load(std::memory_order_relaxed);
  }

private:
  // Bit 63: has quorum; bits 32-62: configured; bits 0-30: visible.
  static constexpr uint64_t has_bit = uint64_t{1} << 63;

  static uint64_t pack(const quorum_reading& r) noexcept {
    return (r.has_quorum ? has_bit : 0) |
           (uint64_t{r.configured & 0x7fffffffu} << 32) |
           uint64_t{r.visible & 0x7fffffffu};
  }

  std::atomic<uint64_t> word_{has_bit | (uint64_t{1} << 32) | 1u};
  std::atomic<uint64_t> refusals_{0};
};

} // namespace tb
