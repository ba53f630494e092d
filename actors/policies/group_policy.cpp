#include "actors/policies/group_policy.hpp"

#include <algorithm>

namespace tb {

bool group_member::has_tag(const std::string& tag) const {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

const group_member* member_directory::find(uint64_t key) const {
  auto i = members_.find(key);
  return i == members_.end() ? nullptr : &i->second;
}

group_member* member_directory::find(uint64_t key) {
  auto i = members_.find(key);
  return i == members_.end() ? nullptr : &i->second;
}

uint64_t member_directory::free_credit() const {
  uint64_t total = 0;
  for (auto& [key, member] : members_)
    if (member.has_credit())
      total += member.max_in_flight - member.in_flight;
  return total;
}

std::size_t member_directory::active_count() const {
  return static_cast<std::size_t>(
      std::count_if(members_.begin(), members_.end(),
                    [](const auto& kv) { return kv.second.active; }));
}

uint64_t member_directory::add(group_member member) {
  auto key = next_key_++;
  members_.emplace(key, std::move(member));
  order_.push_back(key);
  return key;
}

void member_directory::erase(uint64_t key) {
  members_.erase(key);
  order_.erase(std::remove(order_.begin(), order_.end(), key), order_.end());
}

group_policy::~group_policy() = default;

void group_policy::joined(uint64_t, const group_member&) {
  // nop: a policy that only reads the directory needs no bookkeeping.
}

void group_policy::left(uint64_t) {
  // nop
}

} // namespace tb
