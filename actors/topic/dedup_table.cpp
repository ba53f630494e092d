#include "actors/topic/dedup_table.hpp"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tb {

namespace {

constexpr uint64_t k1 = 0x9e3779b97f4a7c15ull;
constexpr uint64_t k2 = 0xc2b2ae3d27d4eb4full;

uint64_t rotl(uint64_t x, int r) noexcept {
  return (x << r) | (x >> (64 - r));
}

// The splitmix64 finalizer: every input bit flips half the output bits.
uint64_t avalanche(uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Returns the last `n` (< 8) bytes at `p` as a little-endian word whose
// high bytes are 0, as a memcpy into a zeroed word would, but with whole
// loads: the bytes copied one by one into a word on the stack and read
// back at once stalled the read (no store-to-load forwarding), 70 % of
// the key's cost (docs/performance.md). `size` bytes end at p + n, so a
// string of 8 bytes or more is read by one load that ends with it.
uint64_t dedup_tail(const char* p, std::size_t n, std::size_t size) noexcept {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                "dedup_tail reads words little-endian");
  if (n == 0)
    return 0;
  uint64_t w;
  if (size >= 8) {
    std::memcpy(&w, p + n - 8, 8);
    return w >> (64 - 8 * n);
  }
  if (n >= 4) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    return lo | (uint64_t{hi} << (8 * (n - 4)));
  }
  // 1 to 3 bytes: the first, the middle and the last.
  auto byte = [&](std::size_t i) {
    return uint64_t{static_cast<unsigned char>(p[i])};
  };
  return byte(0) | (byte(n / 2) << (8 * (n / 2))) |
         (byte(n - 1) << (8 * (n - 1)));
}

// Two independent 64-bit lanes over 8-byte words.
struct hasher {
  uint64_t a = 0x243f6a8885a308d3ull;
  uint64_t b = 0x13198a2e03707344ull;

  void word(uint64_t w) noexcept {
    a = rotl(a ^ (w * k1), 29) * k2;
    b = rotl(b ^ (w * k2), 31) * k1;
  }

  void bytes(std::string_view s) noexcept {
    auto* p = s.data();
    auto n = s.size();
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      word(w);
    }
    word(dedup_tail(p, n, s.size()));
    word(s.size()); // topic "a" + id "bc" differs from "ab" + "c"
  }
};

} // namespace

dedup_topic_hash make_dedup_topic_hash(std::string_view topic) noexcept {
  hasher h;
  h.bytes(topic);
  return dedup_topic_hash{h.a, h.b};
}

dedup_key make_dedup_key(const dedup_topic_hash& topic,
                         std::string_view id) noexcept {
  hasher h{topic.a, topic.b};
  h.bytes(id);
  return dedup_key{avalanche(h.a ^ rotl(h.b, 17)), avalanche(h.b + h.a * k1)};
}

dedup_key make_dedup_key(std::string_view topic, std::string_view id) noexcept {
  return make_dedup_key(make_dedup_topic_hash(topic), id);
}

numbered_msg_ids::numbered_msg_ids(std::string_view base) noexcept
    : size_(std::min(base.size(), max_msg_id_bytes)),
      number_bytes_(std::min<std::size_t>(size_, 8)) {
  std::memcpy(bytes_, base.data(), size_);
  for (std::size_t i = size_ - number_bytes_; i < size_; ++i)
    number_ = number_ << 8 | static_cast<unsigned char>(bytes_[i]);
}

std::string_view numbered_msg_ids::at(uint64_t index) noexcept {
  auto number = number_ + index;
  for (std::size_t i = size_; i > size_ - number_bytes_; --i) {
    bytes_[i - 1] = static_cast<char>(number & 0xff);
    number >>= 8;
  }
  return {bytes_, size_};
}

namespace detail {

bucket_masks scan_bucket_scalar(const uint64_t* lanes, uint32_t tag,
                                seq_window seqs) noexcept {
  bucket_masks masks;
  for (uint32_t i = 0; i < 8; ++i) {
    auto value = lanes[i];
    auto live = static_cast<uint32_t>(value) != 0 &&
                seqs.holds(static_cast<uint32_t>(value) - 1);
    masks.live |= static_cast<uint32_t>(live) << i;
    masks.tagged |=
        static_cast<uint32_t>(static_cast<uint32_t>(value >> 32) == tag) << i;
  }
  return masks;
}

#if defined(__SSE2__)

namespace {

// Returns a mask of the 4 lanes of `values` (seq + 1 each) that name an
// entry of `seqs`: the scalar rule, with unsigned compares as signed ones
// of values offset by 2^31.
__attribute__((always_inline)) inline int live_lanes(__m128i values,
                                                     seq_window seqs) noexcept {
  auto sign = _mm_set1_epi32(INT32_MIN);
  auto head = _mm_set1_epi32(static_cast<int>(seqs.head));
  auto seq = _mm_sub_epi32(values, _mm_set1_epi32(1));
  auto wrapped = _mm_cmpgt_epi32(_mm_xor_si128(head, sign),
                                 _mm_xor_si128(seq, sign)); // seq < head
  auto d = _mm_add_epi32(
      _mm_sub_epi32(seq, head),
      _mm_and_si128(wrapped, _mm_set1_epi32(static_cast<int>(seqs.period))));
  auto in_ring = _mm_cmpgt_epi32(
      _mm_xor_si128(_mm_set1_epi32(static_cast<int>(seqs.size)), sign),
      _mm_xor_si128(d, sign)); // d < size
  auto unused = _mm_cmpeq_epi32(values, _mm_setzero_si128());
  return _mm_movemask_ps(_mm_castsi128_ps(_mm_andnot_si128(unused, in_ring)));
}

// scan_bucket, inlined into dedup_table::seen (a call cost a sixth of a
// check).
__attribute__((always_inline)) inline bucket_masks
scan_bucket_sse2(const uint64_t* lanes, uint32_t tag,
                 seq_window seqs) noexcept {
  auto* p = reinterpret_cast<const __m128i*>(lanes);
  auto l01 = _mm_castsi128_ps(_mm_load_si128(p));
  auto l23 = _mm_castsi128_ps(_mm_load_si128(p + 1));
  auto l45 = _mm_castsi128_ps(_mm_load_si128(p + 2));
  auto l67 = _mm_castsi128_ps(_mm_load_si128(p + 3));
  // The low halves (seq + 1) of lanes 0-3 and 4-7, and the high (tags).
  auto values_lo = _mm_castps_si128(_mm_shuffle_ps(l01, l23, 0x88));
  auto values_hi = _mm_castps_si128(_mm_shuffle_ps(l45, l67, 0x88));
  auto tags_lo = _mm_castps_si128(_mm_shuffle_ps(l01, l23, 0xdd));
  auto tags_hi = _mm_castps_si128(_mm_shuffle_ps(l45, l67, 0xdd));
  auto wanted = _mm_set1_epi32(static_cast<int>(tag));
  bucket_masks masks;
  masks.live = static_cast<uint32_t>(live_lanes(values_lo, seqs) |
                                     (live_lanes(values_hi, seqs) << 4));
  masks.tagged = static_cast<uint32_t>(
      _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(tags_lo, wanted))) |
      (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(tags_hi, wanted)))
       << 4));
  return masks;
}

} // namespace

bucket_masks scan_bucket(const uint64_t* lanes, uint32_t tag,
                         seq_window seqs) noexcept {
  return scan_bucket_sse2(lanes, tag, seqs);
}

#else

bucket_masks scan_bucket(const uint64_t* lanes, uint32_t tag,
                         seq_window seqs) noexcept {
  return scan_bucket_scalar(lanes, tag, seqs);
}

#endif

} // namespace detail

dedup_table::dedup_table(std::size_t max_ids, uint32_t seq_limit)
    : max_ids_(std::clamp<std::size_t>(max_ids, 1, std::size_t{1} << 30)),
      seq_limit_(seq_limit) {
  // nop
}

bool dedup_table::seen(dedup_key key, uint64_t first_id, time_point now,
                       std::chrono::milliseconds window, uint64_t& first) {
  // A free slot of the home bucket, seen on the way: the new entry's, unless
  // the index is rebuilt.
  uint64_t* free_slot = nullptr;
  uint64_t h1 = key.h1;
  uint64_t h2 = key.h2;
  keep_in_registers(h1, h2);
  auto t = tag(dedup_key{h1, h2});
  auto home_bucket = home(dedup_key{h1, h2});
  if (size_ > 0) {
    constexpr uint32_t slot_lanes = (1u << bucket_slots) - 1;
    auto seqs = ring_seqs();
    for (auto b = home_bucket;;) {
      auto& bk = buckets_[b];
#if defined(__SSE2__)
      auto masks = detail::scan_bucket_sse2(bk.lanes, t, seqs);
#else
      auto masks = detail::scan_bucket(bk.lanes, t, seqs);
#endif
      if (b == home_bucket) {
        if (auto free = ~masks.live & slot_lanes)
          free_slot = &bk.lanes[__builtin_ctz(free)];
      }
      // Ring entries are read only for remembered slots with the key's tag.
      for (auto hits = masks.live & masks.tagged & slot_lanes; hits != 0;
           hits &= hits - 1) {
        auto slot = bk.lanes[__builtin_ctz(hits)];
        auto& e = ring_[position(static_cast<uint32_t>(slot - 1))];
        if (e.key.h1 != h1 || e.key.h2 != h2)
          continue;
        if (e.due > now) {
          ++duplicates_;
          first = e.first_id;
          return true;
        }
        // Its window ended, but it waits behind an entry with a longer
        // window: remembered anew, in place.
        e.first_id = first_id;
        e.due = now + window;
        return false;
      }
      if ((masks.live & (1u << bucket_slots)) == 0)
        break; // no key still remembered went beyond this bucket
      if (++b == buckets_.size())
        b = 0;
    }
  }
  if (size_ == ring_.size()) {
    if (ring_.size() < max_ids_) {
      grow(std::min(std::max<std::size_t>(ring_.size() * 4, 1024), max_ids_));
      free_slot = nullptr; // the index was rebuilt
    } else {
      pop_oldest();
      ++evicted_;
    }
  }
  // The newest entry's seq and place, without a division.
  auto seq = uint64_t{head_seq_} + size_;
  if (seq >= period_)
    seq -= period_;
  auto pos = head_ + size_;
  if (pos >= ring_.size())
    pos -= ring_.size();
  ring_[pos] = entry{dedup_key{h1, h2}, first_id, now + window};
  ++size_;
  if (free_slot != nullptr)
    *free_slot = (static_cast<uint64_t>(t) << 32) | (seq + 1);
  else
    index(dedup_key{h1, h2}, static_cast<uint32_t>(seq));
  if (++since_scrub_ >= period_ / 4)
    scrub();
  return false;
}

std::optional<dedup_table::time_point> dedup_table::expire(time_point now) {
  while (size_ > 0 && ring_[head_].due <= now) {
    pop_oldest();
    ++expired_;
  }
  if (size_ == 0)
    return std::nullopt;
  return ring_[head_].due;
}

void dedup_table::pop_oldest() noexcept {
  if (++head_ == ring_.size())
    head_ = 0;
  if (++head_seq_ == period_)
    head_seq_ = 0;
  --size_;
}

void dedup_table::index(const dedup_key& key, uint32_t seq) noexcept {
  auto value = (static_cast<uint64_t>(tag(key)) << 32) | (uint64_t{seq} + 1);
  // A free slot exists: the buckets have 7 slots per 4 entries.
  for (auto b = home(key);;) {
    auto& bk = buckets_[b];
    for (std::size_t i = 0; i < bucket_slots; ++i)
      if (!live_value(bk.lanes[i])) {
        bk.lanes[i] = value;
        return;
      }
    bk.lanes[bucket_slots] = uint64_t{seq} + 1;
    if (++b == buckets_.size())
      b = 0;
  }
}

void dedup_table::scrub() noexcept {
  // A forgotten seq would look remembered again once the seqs come round
  // (period_ entries later): free them while they cannot (every period_/4
  // entries; seqs stay apart by at most max_ids + period_/4).
  since_scrub_ = 0;
  for (auto& bk : buckets_) {
    for (auto& lane : bk.lanes) // the slots and the overflow mark
      if (lane != 0 && !live_value(lane))
        lane = 0;
  }
}

void dedup_table::grow(std::size_t capacity) {
  decltype(ring_) next;
  next.reserve(capacity);
  for (std::size_t i = 0; i < size_; ++i)
    next.push_back(ring_[(head_ + i) % ring_.size()]);
  next.resize(capacity);
  ring_ = std::move(next);
  head_ = 0;
  head_seq_ = 0;
  // At least 3 ring sizes (4 unless that passes 2^32), so that the scrub
  // every period_/4 entries frees a forgotten seq before it comes round.
  auto rounds = std::max<uint64_t>(seq_limit_ / capacity, 4);
  period_ = static_cast<uint32_t>(
      std::min<uint64_t>(rounds * capacity, UINT32_MAX / capacity * capacity));
  since_scrub_ = 0;
  decltype(buckets_) buckets((capacity + 3) / 4);
  buckets_.swap(buckets);
  // Each entry's bucket is a likely cache miss: fetch 16 entries ahead so
  // that the misses overlap.
  constexpr std::size_t ahead = 16;
  for (std::size_t i = 0; i < size_; ++i) {
    if (i + ahead < size_)
      prefetch(ring_[i + ahead].key);
    index(ring_[i].key, static_cast<uint32_t>(i));
  }
}

} // namespace tb
