// key_hash: sticky routing by message key. Messages with the same key go to
// the same member while membership is stable; a consistent-hash ring makes
// a member joining or leaving move only its own share of the keys.

#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/policies/group_policy.hpp"
#include "actors/policies/round_robin_policy.hpp"

namespace tb {

/// Places every member at `points_per_member` pseudo-random points of a
/// 64-bit hash ring; a key belongs to the member owning the first point at
/// or after the key's hash. A key's member without free credit holds the
/// key's messages back (other keys go on), so one key's messages reach one
/// member in order. Messages without a key go round robin.
class key_hash_policy : public group_policy {
public:
  /// Points each member owns on the ring; more points spread keys more
  /// evenly.
  static constexpr uint32_t points_per_member = 128;

  /// Puts the member's points on the ring.
  void joined(uint64_t key, const group_member& member) override;

  /// Takes the member's points off the ring.
  void left(uint64_t key) override;

  /// Returns the owner of `msg.key` if it has credit (0 if not), or the
  /// next member round robin when `msg.key` is empty.
  uint64_t pick(const message_record& msg,
                const member_directory& members) override;

  /// Returns the member that owns `routing_key` (0 if no member is on the
  /// ring), whatever its credit.
  uint64_t owner(std::string_view routing_key) const;

  /// Returns the ring position of `routing_key`: a stable 64-bit hash.
  static uint64_t hash_key(std::string_view routing_key) noexcept;

private:
  // (point, member key), sorted by point.
  std::vector<std::pair<uint64_t, uint64_t>> ring_;
  round_robin_policy keyless_;
};

} // namespace tb
