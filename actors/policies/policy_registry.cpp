#include "actors/policies/policy_registry.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "actors/policies/key_hash_policy.hpp"
#include "actors/policies/least_loaded_policy.hpp"
#include "actors/policies/round_robin_policy.hpp"
#include "routing/topic.hpp"

namespace tb {

namespace {

// The table and its lock, with the built-in policies registered on first
// use (so no static initialization order matters).
struct registry_table {
  std::mutex mtx;
  std::map<std::string, policy_factory> factories;

  registry_table() {
    factories.emplace("round_robin", policy_factory_of<round_robin_policy>());
    factories.emplace("key_hash", policy_factory_of<key_hash_policy>());
    factories.emplace("least_loaded", policy_factory_of<least_loaded_policy>());
  }
};

registry_table& table() {
  static registry_table instance;
  return instance;
}

} // namespace

bool policy_registry::add(const std::string& name, policy_factory factory) {
  if (validate_group_name(name) || !factory)
    return false;
  auto& t = table();
  std::lock_guard<std::mutex> guard{t.mtx};
  return t.factories.emplace(name, std::move(factory)).second;
}

bool policy_registry::contains(const std::string& name) {
  auto& t = table();
  std::lock_guard<std::mutex> guard{t.mtx};
  return t.factories.count(name) > 0;
}

std::unique_ptr<group_policy>
policy_registry::make(const std::string& name, const group_settings& settings) {
  policy_factory factory;
  {
    auto& t = table();
    std::lock_guard<std::mutex> guard{t.mtx};
    auto i = t.factories.find(name);
    if (i == t.factories.end())
      return nullptr;
    factory = i->second;
  }
  return factory(settings);
}

std::vector<std::string> policy_registry::names() {
  auto& t = table();
  std::lock_guard<std::mutex> guard{t.mtx};
  std::vector<std::string> result;
  for (auto& [name, factory] : t.factories)
    result.push_back(name);
  return result;
}

std::string policy_registry::names_text() {
  std::string result;
  for (auto& name : names()) {
    if (!result.empty())
      result += ", ";
    result += name;
  }
  return result;
}

} // namespace tb
