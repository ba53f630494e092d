#include "priority_policy.hpp"

namespace example {

bool is_high_priority(const tb::message_record& msg) {
  return msg.header("priority") == std::string_view{"high"};
}

void priority_first_policy::joined(uint64_t key,
                                   const tb::group_member& member) {
  if (member.has_tag(high_tag))
    high_.joined(key, member);
  else
    normal_.joined(key, member);
}

void priority_first_policy::left(uint64_t key) {
  // Each rotation ignores keys it does not hold.
  high_.left(key);
  normal_.left(key);
}

uint64_t priority_first_policy::pick(const tb::message_record& msg,
                                     const tb::member_directory& members) {
  if (is_high_priority(msg)) {
    auto key = high_.next(members);
    return key != 0 ? key : normal_.next(members);
  }
  auto key = normal_.next(members);
  if (key != 0)
    return key;
  auto any_normal = false;
  for (auto k : members.join_order()) {
    auto& member = members.at(k);
    any_normal =
        any_normal || (member.may_receive() && !member.has_tag(high_tag));
  }
  return any_normal ? 0 : high_.next(members);
}

} // namespace example
