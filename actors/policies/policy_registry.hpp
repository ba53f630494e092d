// The names under which group policies are known (spec 8). The built-in
// policies are always there; a program adds its own with one line before
// the broker starts:
//
//   tb::register_policy<priority_first_policy>("priority_first");
//
// and a group selects it with `policy = "priority_first"` in its TOML table
// or in CreateGroup.

#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "actors/policies/group_policy.hpp"
#include "config/broker_config.hpp"

namespace tb {

/// Makes the policy object of one group from the group's settings.
using policy_factory =
    std::function<std::unique_ptr<group_policy>(const group_settings&)>;

/// The process-wide table from policy names to factories. Thread-safe.
class policy_registry {
public:
  /// Registers `factory` under `name`; returns false (and changes nothing)
  /// if the name is taken or does not follow the group-name rule.
  static bool add(const std::string& name, policy_factory factory);

  /// Returns true if a policy is registered under `name`.
  static bool contains(const std::string& name);

  /// Makes the policy `name` for a group with `settings`; null if unknown.
  static std::unique_ptr<group_policy> make(const std::string& name,
                                            const group_settings& settings);

  /// Returns the registered names, sorted.
  static std::vector<std::string> names();

  /// Returns the registered names as one readable list: `a, b, c`.
  static std::string names_text();
};

/// Returns a factory that makes a `Policy`, which derives from
/// `group_policy` and is constructible from `const group_settings&` or by
/// default.
template <class Policy>
policy_factory policy_factory_of() {
  return [](const group_settings& settings) -> std::unique_ptr<group_policy> {
    if constexpr (std::is_constructible_v<Policy, const group_settings&>)
      return std::make_unique<Policy>(settings);
    else
      return std::make_unique<Policy>();
  };
}

/// Registers `Policy` under `name` (see `policy_factory_of`). Returns false
/// if the name is taken or invalid.
template <class Policy>
bool register_policy(const std::string& name) {
  return policy_registry::add(name, policy_factory_of<Policy>());
}

} // namespace tb
