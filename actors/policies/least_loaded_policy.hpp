// least_loaded: each message goes to the member with the fewest deliveries
// in flight, so a slow member gets less work than a fast one.

#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "actors/policies/group_policy.hpp"

namespace tb {

/// Hands each message to the member with free credit and the fewest
/// unacked deliveries; ties go round robin, so equal members share evenly.
class least_loaded_policy : public group_policy {
public:
  /// Adds the member to the candidates.
  void joined(uint64_t key, const group_member& member) override;

  /// Removes the member from the candidates.
  void left(uint64_t key) override;

  /// Returns the least loaded member with free credit, or 0.
  uint64_t pick(const message_record& msg,
                const member_directory& members) override;

private:
  std::vector<uint64_t> candidates_;
  std::size_t start_ = 0;
};

} // namespace tb
