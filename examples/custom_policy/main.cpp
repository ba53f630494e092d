// priority_broker: the tinybroker broker plus one user-written group policy,
// `priority_first` (priority_policy.hpp), selected in custom_policy.toml.
//
//   priority_broker --config examples/custom_policy/custom_policy.toml

#include "actors/policies/policy_registry.hpp"
#include "net/broker_main.hpp"
#include "priority_policy.hpp"

int main(int argc, char** argv) {
  // The one registration line: from now on groups may name the policy.
  tb::register_policy<example::priority_first_policy>("priority_first");
  return tb::run_broker(argc, argv, "priority_broker");
}
