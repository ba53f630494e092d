#include "actors/topic/dedup_table.hpp"

#include <algorithm>
#include <cstring>

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
    uint64_t tail = 0;
    if (n > 0)
      std::memcpy(&tail, p, n);
    word(tail);
    word(s.size()); // topic "a" + id "bc" differs from "ab" + "c"
  }
};

} // namespace

dedup_key make_dedup_key(std::string_view topic, std::string_view id) noexcept {
  hasher h;
  h.bytes(topic);
  h.bytes(id);
  return dedup_key{avalanche(h.a ^ rotl(h.b, 17)), avalanche(h.b + h.a * k1)};
}

dedup_table::dedup_table(std::size_t max_ids)
    : max_ids_(std::clamp<std::size_t>(max_ids, 1, std::size_t{1} << 30)) {
  // nop
}

std::optional<uint64_t> dedup_table::check(const dedup_key& key,
                                           uint64_t first_id, time_point now,
                                           std::chrono::milliseconds window) {
  if (size_ > 0)
    for (auto i = home(key);; i = (i + 1) & mask_) {
      auto slot = slots_[i];
      if (slot == 0)
        break;
      if ((slot >> 32) != tag(key))
        continue; // another key: no read of its ring entry
      auto& e = ring_[(slot & 0xffffffffu) - 1];
      if (e.key == key) {
        if (e.due > now) {
          ++duplicates_;
          return e.first_id;
        }
        // Its window ended, but it waits behind an entry with a longer
        // window: remembered anew, in place.
        e.first_id = first_id;
        e.due = now + window;
        return std::nullopt;
      }
    }
  if (size_ == ring_.size()) {
    if (ring_.size() < max_ids_) {
      grow(std::min(std::max<std::size_t>(ring_.size() * 2, 1024), max_ids_));
    } else {
      pop_oldest();
      ++evicted_;
    }
  }
  auto pos = (head_ + size_) % ring_.size();
  ring_[pos] = entry{key, first_id, now + window};
  ++size_;
  auto i = home(key);
  while (slots_[i] != 0)
    i = (i + 1) & mask_;
  slots_[i] = make_slot(key, pos);
  return std::nullopt;
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

void dedup_table::pop_oldest() {
  auto target = make_slot(ring_[head_].key, head_);
  auto i = home(ring_[head_].key);
  while (slots_[i] != target)
    i = (i + 1) & mask_;
  // Backward-shift deletion: move up each later entry of the probe run
  // whose home is not between the hole and itself.
  for (auto j = (i + 1) & mask_; slots_[j] != 0; j = (j + 1) & mask_) {
    auto k = static_cast<std::size_t>(slots_[j] >> 32) & mask_;
    bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (!stays) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = 0;
  head_ = (head_ + 1) % ring_.size();
  --size_;
}

void dedup_table::grow(std::size_t capacity) {
  std::vector<entry> next;
  next.reserve(capacity);
  for (std::size_t i = 0; i < size_; ++i)
    next.push_back(ring_[(head_ + i) % ring_.size()]);
  next.resize(capacity);
  ring_ = std::move(next);
  head_ = 0;
  std::size_t slots = 2;
  while (slots < 2 * capacity)
    slots *= 2;
  slots_.assign(slots, 0);
  mask_ = slots - 1;
  for (std::size_t pos = 0; pos < size_; ++pos) {
    auto i = home(ring_[pos].key);
    while (slots_[i] != 0)
      i = (i + 1) & mask_;
    slots_[i] = make_slot(ring_[pos].key, pos);
  }
}

} // namespace tb
