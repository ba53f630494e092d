// A user-written group policy: messages with the header `priority=high` go
// first to members that joined with the tag `high`; other messages keep off
// those members while any other member is connected.
//
// It is a complete policy: one class, registered by name in one line
// (main.cpp) and selected in custom_policy.toml. docs/extending.md walks
// through it.

#pragma once

#include <cstdint>

#include "actors/policies/group_policy.hpp"
#include "actors/policies/round_robin_policy.hpp"

namespace example {

/// Picks members by message priority and member tag:
/// - `priority=high`: the next `high` member with free credit, round robin;
///   if none has credit, any other member with credit.
/// - anything else: the next member without the `high` tag, round robin; the
///   `high` members only when no other member is connected.
class priority_first_policy : public tb::group_policy {
public:
  /// The tag that marks a member for urgent work.
  static constexpr const char* high_tag = "high";

  /// Puts the member in the rotation its tags select.
  void joined(uint64_t key, const tb::group_member& member) override;

  /// Takes the member out of its rotation.
  void left(uint64_t key) override;

  /// Returns the member for `msg` by the rules above, or 0 to hold it.
  uint64_t pick(const tb::message_record& msg,
                const tb::member_directory& members) override;

private:
  // Members tagged `high`, and the others, each in join order.
  tb::round_robin_policy high_;
  tb::round_robin_policy normal_;
};

/// Returns true if `msg` carries the header `priority=high`.
bool is_high_priority(const tb::message_record& msg);

} // namespace example
