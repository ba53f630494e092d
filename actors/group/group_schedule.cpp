#include "actors/group/group_schedule.hpp"

#include <algorithm>

namespace tb {

namespace {

// Orders a max-heap so that its top is the earliest entry.
template <class Entry>
bool later(const Entry& x, const Entry& y) noexcept {
  return x.due != y.due ? x.due > y.due : x.seq > y.seq;
}

} // namespace

void group_schedule::add(message_ref msg, time_point due, uint64_t key) {
  auto seq = key != 0 ? key : msg->id();
  heap_.push_back(entry{due.time_since_epoch().count(), seq, std::move(msg)});
  std::push_heap(heap_.begin(), heap_.end(), later<entry>);
}

message_ref group_schedule::take_due(time_point now, uint64_t* key) {
  if (heap_.empty() || heap_.front().due > now.time_since_epoch().count())
    return {};
  return pop(key);
}

message_ref group_schedule::take_first(uint64_t* key) {
  return pop(key);
}

message_ref group_schedule::pop(uint64_t* key) {
  std::pop_heap(heap_.begin(), heap_.end(), later<entry>);
  if (key != nullptr)
    *key = heap_.back().seq;
  auto msg = std::move(heap_.back().msg);
  heap_.pop_back();
  // Give a large heap's memory back once few entries remain: the copy then
  // moves at most `shrink_at` entries, so it never stalls the group (a
  // shrink at a quarter of a million entries took ~5 ms).
  constexpr std::size_t shrink_at = 16384;
  if (heap_.capacity() > 4 * shrink_at && heap_.size() <= shrink_at)
    heap_.shrink_to_fit();
  return msg;
}

} // namespace tb
