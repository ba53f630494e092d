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
// million ids). The table is flat, with no allocation per id:
//
// - a ring of entries in arrival order (key, first message id, due time:
//   32 bytes), each numbered by its arrival (`seq`, modulo a period that is
//   a multiple of the ring's size, so that seq % capacity is its place);
// - an index of 64-byte buckets (one cache line) of 7 slots, each slot 32
//   bits of the key and the seq of its entry. A slot whose seq is no longer
//   in the ring (forgotten) is free: forgetting the oldest entry moves the
//   ring's head and touches no slot. A key goes to the first bucket, from
//   its home on, with a free slot; each bucket it passes remembers the seq
//   of the newest key placed beyond it, so a probe goes on to the next
//   bucket only while that key is still remembered.
//
// The index has one bucket per 4 entries of the ring (16 bytes per id), so
// a check reads one cache line of the index (its 7 slots and the overflow
// mark compared 4 lanes at a time with SSE2, `detail::scan_bucket`), and
// the ring only for a remembered slot whose 32 bits match: 48 bytes per
// remembered id, whatever the lengths of topic and id (docs/performance.md
// measures it). The table grows
// fourfold up to `max_ids` entries (each growth re-indexes every entry, so
// fewer growths cost a fresh broker's first ids less); then the oldest
// entry goes first (counted in `evicted()`).

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

/// The hash of a topic, the start of the keys of its message ids: a
/// session hashes a run of messages to one topic once.
struct dedup_topic_hash {
  /// The first lane.
  uint64_t a = 0;
  /// The second lane.
  uint64_t b = 0;
};

/// Keeps `h1` and `h2`, the halves of a key, in two general registers at
/// this point. GCC 12 otherwise moves a key through the stack as two 8-byte
/// stores and reads it back as one 16-byte word, which the store buffer
/// cannot forward: a stall that cost a third of a check and half of a
/// publish job's work on ids (docs/performance.md).
inline void keep_in_registers(uint64_t& h1, uint64_t& h2) noexcept {
  asm("" : "+r"(h1), "+r"(h2));
}

/// Returns the hash of `topic`.
dedup_topic_hash make_dedup_topic_hash(std::string_view topic) noexcept;

/// Returns the key of message id `id` on the topic whose hash is `topic`
/// (the same as `make_dedup_key` of the topic's name).
dedup_key make_dedup_key(const dedup_topic_hash& topic,
                         std::string_view id) noexcept;

/// Returns the key of message id `id` on `topic`.
dedup_key make_dedup_key(std::string_view topic, std::string_view id) noexcept;

/// The msg_ids of a publish frame's messages numbered from the frame's
/// `msg_id_base` (docs/protocol.md): message `i`'s id is the base with its
/// last min(8, size) bytes, read as a big-endian number, increased by `i`
/// (modulo 2^(8 x those bytes)). An idempotent client's ids (8 random bytes
/// and a 7-byte counter, client/msg_id.hpp) numbered from the frame's first
/// are its other messages' ids, so a frame carries one id, not one per
/// message, as Kafka's idempotent producer numbers a batch from its base
/// sequence.
class numbered_msg_ids {
public:
  /// Reads `base`, 1 to `max_msg_id_bytes` bytes.
  explicit numbered_msg_ids(std::string_view base) noexcept;

  /// Returns the id of message `index` of the frame, valid until the next
  /// call.
  std::string_view at(uint64_t index) noexcept;

private:
  /// The base's bytes, then the id last returned.
  char bytes_[max_msg_id_bytes];
  /// The base's length.
  std::size_t size_;
  /// How many of the last bytes are the number (at most 8).
  std::size_t number_bytes_;
  /// The base's number.
  uint64_t number_ = 0;
};

namespace detail {

/// The arrival numbers (seqs) of a table's ring: `size` entries from
/// `head`, modulo `period`.
struct seq_window {
  /// The seq of the oldest entry.
  uint32_t head = 0;
  /// Seqs are modulo this.
  uint32_t period = 1;
  /// How many entries the ring holds.
  uint32_t size = 0;

  /// Returns true if the entry numbered `seq` is in the ring. Without a
  /// branch: seqs of slots are random against `head`, and a mispredicted
  /// branch per slot cost more than the arithmetic.
  bool holds(uint32_t seq) const noexcept {
    uint32_t d = seq - head;
    d += period & (0u - static_cast<uint32_t>(seq < head));
    return d < size;
  }
};

/// What one index bucket holds, one bit per lane (7 slots and the
/// overflow mark in bit 7).
struct bucket_masks {
  /// Lanes whose seq + 1 (the low 32 bits) names an entry in the ring.
  uint32_t live = 0;
  /// Lanes whose tag (the high 32 bits) is the one asked for.
  uint32_t tagged = 0;
};

/// Returns the masks of the 8 lanes at `lanes` for `tag`, one lane at a
/// time (the reference of `scan_bucket`, and its form without SSE2).
bucket_masks scan_bucket_scalar(const uint64_t* lanes, uint32_t tag,
                                seq_window seqs) noexcept;

/// Returns the masks of the 8 lanes at `lanes` (64-byte aligned) for `tag`,
/// 4 lanes at a time with SSE2 where the CPU has it: no branch per slot.
bucket_masks scan_bucket(const uint64_t* lanes, uint32_t tag,
                         seq_window seqs) noexcept;

} // namespace detail

/// Remembered message ids of the topics of one shard, forgotten when their
/// window ends or when the table holds `max_ids`. Not thread-safe: owned by
/// one actor.
class dedup_table {
public:
  /// The clock of windows (CAF's actor clock).
  using time_point = std::chrono::steady_clock::time_point;

  /// Creates a table that remembers at most `max_ids` ids (at least 1, at
  /// most 2^30). `seq_limit` bounds the arrival numbers before they wrap
  /// (tests shorten it to see the wrap; at least 4 ring sizes are kept).
  explicit dedup_table(std::size_t max_ids, uint32_t seq_limit = UINT32_MAX);

  /// Returns the broker id of the first message with `key` if it is
  /// remembered and its window has not ended by `now` (counting a
  /// duplicate); otherwise remembers `first_id` under it until
  /// `now + window` and returns nothing.
  std::optional<uint64_t> check(const dedup_key& key, uint64_t first_id,
                                time_point now,
                                std::chrono::milliseconds window) {
    uint64_t first = 0;
    if (seen(key, first_id, now, window, first))
      return first;
    return std::nullopt;
  }

  /// `check` without the optional: returns true and sets `first` to the
  /// broker id of the first message with `key` if it is remembered in its
  /// window; otherwise remembers `first_id` and returns false. (An
  /// optional returned from the table's own code went through the stack
  /// byte by byte and stalled its caller's read of it.)
  bool seen(dedup_key key, uint64_t first_id, time_point now,
            std::chrono::milliseconds window, uint64_t& first);

  /// Asks the CPU to fetch the index line where `check(key, ...)` starts,
  /// so that a caller checking a batch can overlap the memory reads of
  /// several keys (a hint: never changes the table).
  __attribute__((always_inline)) void
  prefetch(const dedup_key& key) const noexcept {
    // Inlined always and without a test for an empty index (home is 0
    // there, and a prefetch never faults): otherwise GCC 12 takes the call
    // for one without effects and drops it.
    __builtin_prefetch(buckets_.data() + home(key));
  }

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
    return ring_.capacity() * sizeof(entry) +
           buckets_.capacity() * sizeof(bucket);
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

  // The slots of a bucket.
  static constexpr std::size_t bucket_slots = 7;

  // One cache line of the index.
  struct alignas(64) bucket {
    // Lanes 0-6, the slots: tag << 32 | (seq + 1) of an entry, 0 = never
    // used. Lane 7, the overflow mark: seq + 1 of the newest key placed
    // beyond this bucket, 0 = none.
    uint64_t lanes[bucket_slots + 1];
  };

  // Returns the bounds of the seqs in the ring, for scan_bucket.
  detail::seq_window ring_seqs() const noexcept {
    return {head_seq_, period_, static_cast<uint32_t>(size_)};
  }

  // Returns the 32 bits of `key` its slot keeps.
  static uint32_t tag(const dedup_key& key) noexcept {
    return static_cast<uint32_t>(key.h1 >> 32);
  }

  // Returns the bucket where the probe for `key` starts (other bits than
  // the tag's, mapped onto the buckets without a division).
  std::size_t home(const dedup_key& key) const noexcept {
    return static_cast<std::size_t>(
        (static_cast<uint64_t>(static_cast<uint32_t>(key.h2)) *
         buckets_.size()) >>
        32);
  }

  // Returns true if the entry numbered `seq` is in the ring.
  bool live(uint32_t seq) const noexcept {
    return ring_seqs().holds(seq);
  }

  // Returns true if slot or overflow value `value` (seq + 1; 0 = none)
  // names an entry in the ring.
  bool live_value(uint64_t value) const noexcept {
    return value != 0 && live(static_cast<uint32_t>(value - 1));
  }

  // Returns the ring position of the entry numbered `seq`.
  std::size_t position(uint32_t seq) const noexcept {
    return seq % ring_.size();
  }

  // Forgets the oldest entry (the index keeps its slot, now free).
  void pop_oldest() noexcept;

  // Puts the newest entry (numbered `seq`) into the index.
  void index(const dedup_key& key, uint32_t seq) noexcept;

  // Frees every slot and overflow mark of a forgotten entry, before their
  // seqs come round again.
  void scrub() noexcept;

  // Grows the ring (and rebuilds the index) to hold `capacity` entries.
  void grow(std::size_t capacity);

  std::size_t max_ids_;
  uint32_t seq_limit_;
  std::vector<entry> ring_; // arrival order from head_, size_ entries
  std::vector<bucket> buckets_;
  std::size_t head_ = 0;  // ring position of the oldest entry
  uint32_t head_seq_ = 0; // its seq
  uint32_t period_ = 1;   // seqs are modulo this, a multiple of the ring
  std::size_t size_ = 0;
  uint64_t since_scrub_ = 0; // entries added since the last scrub
  uint64_t duplicates_ = 0;
  uint64_t evicted_ = 0;
  uint64_t expired_ = 0;
};

} // namespace tb
