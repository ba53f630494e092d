#include "actors/topic/delayed_fanout.hpp"

#include <algorithm>

#include "actors/topic/topic_shard.hpp"

namespace tb {

namespace {

// Orders the heap so that its front is the earliest due time, and among
// equal due times the oldest message.
struct later {
  bool operator()(const delayed_entry& x, const delayed_entry& y) const {
    if (x.due != y.due)
      return x.due > y.due;
    return x.message->id() > y.message->id();
  }
};

} // namespace

delayed_fanout::delayed_fanout(std::size_t per_topic,
                               std::shared_ptr<topic_quota> quota)
    : per_topic_(per_topic), quota_(std::move(quota)) {
  // nop
}

delayed_fanout::~delayed_fanout() {
  if (quota_)
    for (std::size_t i = 0; i < heap_.size(); ++i)
      quota_->release();
}

error_info delayed_fanout::hold(time_point due, message_ref message,
                                route_ref route) {
  std::string topic{message->topic()};
  auto& count = per_topic_count_[topic];
  if (count >= per_topic_) {
    if (count == 0)
      per_topic_count_.erase(topic);
    ++refused_;
    return make_error_info(
        ec::schedule_full,
        "topic \"" + topic + "\" holds " + std::to_string(per_topic_) +
            " delayed messages for its fan-out subscribers "
            "(limits.max_delayed_fanout_per_topic); publish it later or "
            "without a delay");
  }
  if (quota_ && !quota_->try_acquire()) {
    if (count == 0)
      per_topic_count_.erase(topic);
    ++refused_;
    return make_error_info(
        ec::schedule_full,
        "the broker holds " + std::to_string(quota_->max()) +
            " delayed messages for fan-out subscribers "
            "(limits.max_delayed_fanout); publish it later or without a "
            "delay");
  }
  ++count;
  heap_.push_back(delayed_entry{due, std::move(message), std::move(route)});
  std::push_heap(heap_.begin(), heap_.end(), later{});
  return {};
}

std::optional<delayed_fanout::time_point> delayed_fanout::next_due() const {
  if (heap_.empty())
    return std::nullopt;
  return heap_.front().due;
}

std::vector<delayed_entry> delayed_fanout::take_due(time_point now,
                                                    std::size_t max) {
  std::vector<delayed_entry> result;
  while (!heap_.empty() && heap_.front().due <= now && result.size() < max) {
    std::pop_heap(heap_.begin(), heap_.end(), later{});
    auto entry = std::move(heap_.back());
    heap_.pop_back();
    auto i = per_topic_count_.find(std::string{entry.message->topic()});
    if (i != per_topic_count_.end() && --i->second == 0)
      per_topic_count_.erase(i);
    if (quota_)
      quota_->release();
    ++fired_;
    result.push_back(std::move(entry));
  }
  return result;
}

std::size_t delayed_fanout::held_for(const std::string& topic) const {
  auto i = per_topic_count_.find(topic);
  return i == per_topic_count_.end() ? 0 : i->second;
}

} // namespace tb
