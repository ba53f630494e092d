// round_robin, the default group policy: strict rotation over the members
// with free credit, in the order they joined.

#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "actors/policies/group_policy.hpp"

namespace tb {

/// Hands messages to members in turn, skipping those without free credit.
/// A member that joins again goes to the end of the rotation.
class round_robin_policy : public group_policy {
public:
  /// Adds the member at the end of the rotation.
  void joined(uint64_t key, const group_member& member) override;

  /// Removes the member from the rotation.
  void left(uint64_t key) override;

  /// Returns the next member in the rotation with free credit, or 0.
  uint64_t pick(const message_record& msg,
                const member_directory& members) override;

  /// Returns the next member in the rotation with free credit, or 0 (for
  /// policies that fall back to round robin).
  uint64_t next(const member_directory& members);

private:
  std::vector<uint64_t> rotation_;
  std::size_t next_ = 0;
};

} // namespace tb
