#include "config/group_checks.hpp"

#include "routing/pattern.hpp"

namespace tb {

std::string dead_letter_topic(const std::string& name,
                              const group_settings& settings) {
  return settings.dead_letter.empty() ? "$dlq." + name : settings.dead_letter;
}

std::vector<group_problem> check_group_settings(const std::string& name,
                                                const group_settings& settings,
                                                const name_limits& limits,
                                                const policy_names& policies) {
  std::vector<group_problem> problems;
  auto add = [&](group_field field, ec code, std::string text) {
    problems.push_back({field, make_error_info(code, std::move(text))});
  };
  if (auto err = validate_group_name(name))
    add(group_field::name, err.code, err.text);
  bool pattern_ok = true;
  if (!settings.pattern.empty())
    if (auto err = validate_pattern(settings.pattern, limits)) {
      add(group_field::pattern, err.code, err.text);
      pattern_ok = false;
    }
  if (settings.dead_letter != "none") {
    auto topic = dead_letter_topic(name, settings);
    if (auto err = validate_topic(topic, limits))
      add(group_field::dead_letter, ec::invalid_topic,
          "dead_letter: " + err.text);
    else if (pattern_ok && !settings.pattern.empty() &&
             pattern_matches(settings.pattern, topic))
      add(group_field::dead_letter_loop, ec::invalid_request,
          "the dead letter topic \"" + topic +
              "\" matches the group's own pattern \"" + settings.pattern +
              "\", so its dead letters would come back to it; choose a "
              "dead_letter outside the pattern, or \"none\"");
  }
  if (policies.known && !policies.known(settings.policy))
    add(group_field::policy, ec::invalid_request,
        "unknown policy \"" + settings.policy +
            "\" (known: " + policies.listed + ")");
  if (settings.ack_wait.count() <= 0)
    add(group_field::ack_wait, ec::invalid_request, "ack_wait must be > 0");
  if (settings.replicas > 1)
    add(group_field::replicas, ec::invalid_request,
        "replicas = " + std::to_string(settings.replicas) +
            ": a group has 0 or 1 replicas");
  return problems;
}

} // namespace tb
