// The rules a consumer group's settings must follow (spec 6), in one place
// for the config loader, CreateGroup and auto-created groups alike.

#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "config/broker_config.hpp"
#include "routing/error.hpp"
#include "routing/topic.hpp"

namespace tb {

/// Returns the dead letter topic of group `name`: its `dead_letter`
/// setting, or `$dlq.<name>` when that is empty. Meaningless when the
/// setting is `"none"` (nothing is dead-lettered then).
std::string dead_letter_topic(const std::string& name,
                              const group_settings& settings);

/// The setting a group problem is about, so that the config loader can
/// point at the right key.
enum class group_field {
  /// The group's name.
  name,
  /// The pattern.
  pattern,
  /// The dead letter topic's syntax.
  dead_letter,
  /// The dead letter topic matched by the group's own pattern: a problem of
  /// the pair, not of either value alone.
  dead_letter_loop,
  /// The policy name.
  policy,
  /// The ack deadline.
  ack_wait,
  /// The number of replicas (issue 32).
  replicas,
};

/// One thing wrong with a group's settings.
struct group_problem {
  /// The setting at fault.
  group_field field;
  /// The code and a sentence naming the problem (without the group's name).
  error_info error;
};

/// Tells whether a policy name is registered, and lists the known ones.
struct policy_names {
  /// Returns true if `name` is a registered policy; empty accepts any name.
  std::function<bool(const std::string&)> known;
  /// The registered names for messages, e.g. `"key_hash, round_robin"`.
  std::string listed;
};

/// Checks the settings of group `name` and returns every problem, in the
/// order of `group_field`: a bad name, a bad pattern, a bad dead letter
/// topic, a dead letter topic that the group's own pattern matches (its dead
/// letters would come back to it forever), an unknown policy, a zero
/// ack_wait, replicas other than 0 or 1. An empty pattern is not checked
/// (the group defaults have none).
std::vector<group_problem> check_group_settings(const std::string& name,
                                                const group_settings& settings,
                                                const name_limits& limits,
                                                const policy_names& policies);

} // namespace tb
