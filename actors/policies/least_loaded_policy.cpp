#include "actors/policies/least_loaded_policy.hpp"

#include <algorithm>

namespace tb {

void least_loaded_policy::joined(uint64_t key, const group_member&) {
  if (std::find(candidates_.begin(), candidates_.end(), key) ==
      candidates_.end())
    candidates_.push_back(key);
}

void least_loaded_policy::left(uint64_t key) {
  candidates_.erase(std::remove(candidates_.begin(), candidates_.end(), key),
                    candidates_.end());
  if (start_ >= candidates_.size())
    start_ = 0;
}

uint64_t least_loaded_policy::pick(const message_record&,
                                   const member_directory& members) {
  auto n = candidates_.size();
  uint64_t best = 0;
  std::size_t best_pos = 0;
  uint32_t best_load = 0;
  // Scanning from a rotating start breaks ties round robin.
  for (std::size_t i = 0; i < n; ++i) {
    auto pos = (start_ + i) % n;
    auto* member = members.find(candidates_[pos]);
    if (member == nullptr || !member->has_credit())
      continue;
    if (best == 0 || member->in_flight < best_load) {
      best = candidates_[pos];
      best_pos = pos;
      best_load = member->in_flight;
    }
  }
  if (best != 0)
    start_ = (best_pos + 1) % n;
  return best;
}

} // namespace tb
