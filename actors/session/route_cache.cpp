#include "actors/session/route_cache.hpp"

#include <algorithm>

namespace tb {

route_cache::route_cache(std::size_t capacity)
    : capacity_(std::max<std::size_t>(capacity, 1)) {
  // nop
}

const route_ref* route_cache::find(std::string_view topic) {
  probe_.assign(topic.data(), topic.size());
  auto i = index_.find(probe_);
  if (i == index_.end())
    return nullptr;
  auto pos = i->second;
  pos->used = true;
  if (pos != entries_.begin())
    entries_.splice(entries_.begin(), entries_, pos);
  return &pos->route;
}

std::optional<std::string> route_cache::insert(route_ref route) {
  const auto& topic = route->topic;
  if (auto i = index_.find(topic); i != index_.end()) {
    if (route->version >= i->second->route->version)
      i->second->route = std::move(route);
    i->second->used = true;
    return std::nullopt;
  }
  std::optional<std::string> evicted;
  if (index_.size() >= capacity_) {
    evicted = entries_.back().route->topic;
    index_.erase(*evicted);
    entries_.pop_back();
  }
  entries_.push_front(entry{std::move(route), true});
  index_.emplace(entries_.front().route->topic, entries_.begin());
  return evicted;
}

bool route_cache::update(const route_ref& route) {
  auto i = index_.find(route->topic);
  if (i == index_.end())
    return false;
  if (route->version >= i->second->route->version)
    i->second->route = route;
  return true;
}

std::vector<std::string> route_cache::sweep() {
  std::vector<std::string> evicted;
  for (auto i = entries_.begin(); i != entries_.end();) {
    if (i->used) {
      i->used = false;
      ++i;
      continue;
    }
    evicted.push_back(i->route->topic);
    index_.erase(i->route->topic);
    i = entries_.erase(i);
  }
  return evicted;
}

std::vector<std::string> route_cache::clear() {
  std::vector<std::string> evicted;
  evicted.reserve(entries_.size());
  for (auto& x : entries_)
    evicted.push_back(x.route->topic);
  entries_.clear();
  index_.clear();
  return evicted;
}

} // namespace tb
