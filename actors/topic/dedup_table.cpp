#include "actors/topic/dedup_table.hpp"

#include <algorithm>

namespace tb {

dedup_table::dedup_table(std::size_t max_ids)
    : max_ids_(std::max<std::size_t>(max_ids, 1)) {
  // nop
}

std::optional<uint64_t> dedup_table::check(std::string_view topic,
                                           std::string_view id,
                                           uint64_t first_id, time_point now,
                                           std::chrono::milliseconds window) {
  // The key: topic, a NUL (never part of a topic), the id.
  probe_.assign(topic);
  probe_.push_back('\0');
  probe_.append(id);
  if (auto i = ids_.find(probe_); i != ids_.end()) {
    ++duplicates_;
    return i->second;
  }
  if (ids_.size() >= max_ids_) {
    pop_oldest();
    ++evicted_;
  }
  auto at = ids_.emplace(probe_, first_id).first;
  order_.push_back(slot{now + window, &at->first});
  return std::nullopt;
}

std::optional<dedup_table::time_point> dedup_table::expire(time_point now) {
  while (!order_.empty() && order_.front().due <= now) {
    pop_oldest();
    ++expired_;
  }
  if (order_.empty())
    return std::nullopt;
  return order_.front().due;
}

void dedup_table::pop_oldest() {
  // Erasing the entry frees the key the slot points to: find it first.
  ids_.erase(ids_.find(*order_.front().key));
  order_.pop_front();
}

} // namespace tb
