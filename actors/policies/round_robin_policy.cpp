#include "actors/policies/round_robin_policy.hpp"

#include <algorithm>

namespace tb {

void round_robin_policy::joined(uint64_t key, const group_member&) {
  if (std::find(rotation_.begin(), rotation_.end(), key) == rotation_.end())
    rotation_.push_back(key);
}

void round_robin_policy::left(uint64_t key) {
  auto i = std::find(rotation_.begin(), rotation_.end(), key);
  if (i == rotation_.end())
    return;
  auto pos = static_cast<std::size_t>(i - rotation_.begin());
  rotation_.erase(i);
  // Whoever was next stays next.
  if (pos < next_)
    --next_;
  if (next_ >= rotation_.size())
    next_ = 0;
}

uint64_t round_robin_policy::pick(const message_record&,
                                  const member_directory& members) {
  return next(members);
}

uint64_t round_robin_policy::next(const member_directory& members) {
  auto n = rotation_.size();
  for (std::size_t i = 0; i < n; ++i) {
    auto pos = (next_ + i) % n;
    auto* member = members.find(rotation_[pos]);
    if (member != nullptr && member->has_credit()) {
      next_ = (pos + 1) % n;
      return rotation_[pos];
    }
  }
  return 0;
}

} // namespace tb
