// The message ids a topic shard remembers for de-duplication (issue 28).
//
// A publisher may give a message a `msg_id`; a second message with the same
// id on the same topic within the window is a duplicate: confirmed, routed
// nowhere. The shard that owns a topic sees every check of its ids, so one
// table per shard needs no lock and no hop beyond the one check per publish
// batch.
//
// Memory: one entry per remembered id, in one hash set keyed by topic and
// id plus one FIFO slot. Per id: the key's bytes (topic + 1 + msg_id, on
// the heap when over 15 bytes), a hash node (string, cached hash, next
// pointer, the first message's broker id: 56 bytes, 64 from malloc), a
// bucket pointer (8) and a FIFO slot (16): about 88 bytes + the key,
// measured in docs/performance.md. At most `max_ids` entries: the oldest
// goes first when the table is full (counted in `evicted()`).

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tb {

/// The longest `msg_id` a message may carry, in bytes.
constexpr std::size_t max_msg_id_bytes = 128;

/// Remembered message ids of the topics of one shard, forgotten when their
/// window ends or when the table holds `max_ids`. Not thread-safe: owned by
/// one actor.
class dedup_table {
public:
  /// The clock of windows (CAF's actor clock).
  using time_point = std::chrono::steady_clock::time_point;

  /// Creates a table that remembers at most `max_ids` ids (at least 1).
  explicit dedup_table(std::size_t max_ids);

  /// Returns the broker id of the first message with `id` on `topic` if it
  /// is remembered (counting a duplicate); otherwise remembers `first_id`
  /// under it until `now + window` and returns nothing.
  std::optional<uint64_t> check(std::string_view topic, std::string_view id,
                                uint64_t first_id, time_point now,
                                std::chrono::milliseconds window);

  /// Forgets every id whose window ended by `now`, oldest first; stops at
  /// the first entry still in its window (an entry behind it with a shorter
  /// window waits for it). Returns when the oldest remaining one is due.
  std::optional<time_point> expire(time_point now);

  /// Returns how many ids are remembered.
  std::size_t size() const noexcept {
    return ids_.size();
  }

  /// Returns how many duplicates `check` found.
  uint64_t duplicates() const noexcept {
    return duplicates_;
  }

  /// Returns how many ids were forgotten early because the table was full.
  uint64_t evicted() const noexcept {
    return evicted_;
  }

  /// Returns how many ids were forgotten because their window ended.
  uint64_t expired() const noexcept {
    return expired_;
  }

private:
  struct slot {
    time_point due;
    const std::string* key;
  };

  // Forgets the oldest entry.
  void pop_oldest();

  std::size_t max_ids_;
  std::unordered_map<std::string, uint64_t> ids_;
  std::deque<slot> order_; // insertion order
  std::string probe_;      // the key of a check, reused
  uint64_t duplicates_ = 0;
  uint64_t evicted_ = 0;
  uint64_t expired_ = 0;
};

} // namespace tb
