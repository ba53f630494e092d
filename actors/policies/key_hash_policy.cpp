#include "actors/policies/key_hash_policy.hpp"

#include <algorithm>

namespace tb {

namespace {

// The splitmix64 finalizer: spreads nearby inputs over the whole range.
uint64_t mix(uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace

uint64_t key_hash_policy::hash_key(std::string_view routing_key) noexcept {
  // FNV-1a, then mixed: stable across runs and platforms.
  uint64_t h = 0xcbf29ce484222325ULL;
  for (auto c : routing_key) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return mix(h);
}

void key_hash_policy::joined(uint64_t key, const group_member& member) {
  keyless_.joined(key, member);
  auto on_ring = std::any_of(ring_.begin(), ring_.end(),
                             [key](const auto& p) { return p.second == key; });
  if (on_ring)
    return;
  for (uint32_t i = 0; i < points_per_member; ++i)
    ring_.emplace_back(mix(mix(key) + i), key);
  std::sort(ring_.begin(), ring_.end());
}

void key_hash_policy::left(uint64_t key) {
  keyless_.left(key);
  ring_.erase(std::remove_if(ring_.begin(), ring_.end(),
                             [key](const auto& p) { return p.second == key; }),
              ring_.end());
}

uint64_t key_hash_policy::owner(std::string_view routing_key) const {
  if (ring_.empty())
    return 0;
  auto h = hash_key(routing_key);
  auto i = std::lower_bound(ring_.begin(), ring_.end(),
                            std::make_pair(h, uint64_t{0}));
  if (i == ring_.end())
    i = ring_.begin();
  return i->second;
}

uint64_t key_hash_policy::pick(const message_record& msg,
                               const member_directory& members) {
  if (msg.key.empty())
    return keyless_.next(members);
  auto key = owner(msg.key);
  auto* member = members.find(key);
  return member != nullptr && member->has_credit() ? key : 0;
}

} // namespace tb
