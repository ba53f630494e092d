// The message ids a topic shard remembers for de-duplication (issue 28).
//
// A publisher may give a message a `msg_id`; a second message with the same
// id on the same topic within the window is a duplicate: confirmed, routed
// nowhere. The shard that owns a topic sees every check of its ids, so one
// table per shard needs no lock and no hop beyond the one check per publish
// batch.
//
// An id is remembered as a 128-bit hash of topic and id (`dedup_key`,
// computed by the publishing session, so that no string travels): two
// different ids collide with odds of about n^2 / 2^129 (1 in 10^26 for a
// million ids). The table is flat, with no allocation per id: a ring of
// entries in arrival order (key, first message id, due time: 32 bytes) and
// an open-addressing index of 8-byte slots (32 bits of the key and the ring
// position, so that probes and deletions rarely read the ring) at most half
// full (16 bytes per id): 48 bytes per remembered id, whatever the lengths
// of topic and id
// (docs/performance.md measures it). It grows by doubling up to `max_ids`
// entries; then the oldest entry goes first (counted in `evicted()`).

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tb {

/// The longest `msg_id` a message may carry, in bytes.
constexpr std::size_t max_msg_id_bytes = 128;

/// A message id on its topic, as a 128-bit hash.
struct dedup_key {
  /// The first half.
  uint64_t h1 = 0;
  /// The second half.
  uint64_t h2 = 0;

  /// Keys are equal when both halves are.
  friend bool operator==(const dedup_key& x, const dedup_key& y) {
    return x.h1 == y.h1 && x.h2 == y.h2;
  }
};

/// Returns the key of message id `id` on `topic`.
dedup_key make_dedup_key(std::string_view topic, std::string_view id) noexcept;

/// Remembered message ids of the topics of one shard, forgotten when their
/// window ends or when the table holds `max_ids`. Not thread-safe: owned by
/// one actor.
class dedup_table {
public:
  /// The clock of windows (CAF's actor clock).
  using time_point = std::chrono::steady_clock::time_point;

  /// Creates a table that remembers at most `max_ids` ids (at least 1, at
  /// most 2^30).
  explicit dedup_table(std::size_t max_ids);

  /// Returns the broker id of the first message with `key` if it is
  /// remembered and its window has not ended by `now` (counting a
  /// duplicate); otherwise remembers `first_id` under it until
  /// `now + window` and returns nothing.
  std::optional<uint64_t> check(const dedup_key& key, uint64_t first_id,
                                time_point now,
                                std::chrono::milliseconds window);

  /// Forgets every id whose window ended by `now`, oldest first; stops at
  /// the first entry still in its window (an entry behind it with a shorter
  /// window waits for it in memory, but `check` no longer finds it). Returns
  /// when the oldest remaining one is due.
  std::optional<time_point> expire(time_point now);

  /// Returns how many ids are remembered.
  std::size_t size() const noexcept {
    return size_;
  }

  /// Returns the bytes the table holds (ring and index).
  std::size_t memory_bytes() const noexcept {
    return ring_.capacity() * sizeof(entry) + slots_.capacity() * 8;
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
  struct entry {
    dedup_key key;
    uint64_t first_id;
    time_point due;
  };

  // Returns the 32 bits of `key` its index slot keeps: its home slot is
  // their low bits, and the others tell most other keys apart without
  // reading their ring entries.
  static uint32_t tag(const dedup_key& key) noexcept {
    return static_cast<uint32_t>(key.h1 >> 32);
  }

  // Returns the index slot where the probe for `key` starts.
  std::size_t home(const dedup_key& key) const noexcept {
    return static_cast<std::size_t>(tag(key)) & mask_;
  }

  // Returns the index slot value of `key` at ring position `pos`.
  static uint64_t make_slot(const dedup_key& key, std::size_t pos) noexcept {
    return (static_cast<uint64_t>(tag(key)) << 32) | (pos + 1);
  }

  // Forgets the oldest entry.
  void pop_oldest();

  // Grows the ring (and rebuilds the index) to hold `capacity` entries.
  void grow(std::size_t capacity);

  std::size_t max_ids_;
  std::vector<entry> ring_;     // arrival order from head_, size_ entries
  std::vector<uint64_t> slots_; // tag << 32 | ring position + 1; 0 = empty
  std::size_t mask_ = 0;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  uint64_t duplicates_ = 0;
  uint64_t evicted_ = 0;
  uint64_t expired_ = 0;
};

} // namespace tb
