#include "actors/group/group_ledger.hpp"

#include <algorithm>

namespace tb {

bool group_ledger::held::went_to(uint64_t member) const noexcept {
  return tries &&
         std::find(tries->begin(), tries->end(), member) != tries->end();
}

void group_ledger::held::add_try(uint64_t member) {
  if (!tries)
    tries = std::make_unique<std::vector<uint64_t>>();
  if (!went_to(member))
    tries->push_back(member);
}

void group_ledger::count_in(const held& msg) {
  held_bytes_ += msg.msg->size_bytes();
}

void group_ledger::count_out(const held& msg) {
  held_bytes_ -= msg.msg->size_bytes();
}

std::optional<group_ledger::time_point>
group_ledger::expiry_of(const message_record& msg) const noexcept {
  auto at = msg.expires_unix_nanos();
  if (rules_.max_age_ns != 0)
    at = std::min(at, msg.due_unix_nanos() + rules_.max_age_ns);
  if (at == INT64_MAX)
    return std::nullopt;
  return to_clock(at);
}

void group_ledger::push_back(held msg) {
  count_in(msg);
  auto level = level_of(*msg.msg);
  queue_.push_back(std::move(msg), level);
}

void group_ledger::push_front(held msg) {
  count_in(msg);
  auto level = level_of(*msg.msg);
  queue_.push_front(std::move(msg), level);
}

group_ledger::held group_ledger::pop_front() {
  auto msg = queue_.pop_front();
  count_out(msg);
  return msg;
}

void group_ledger::schedule(message_ref msg, time_point due, uint64_t key) {
  held_bytes_ += msg->size_bytes();
  schedule_.add(std::move(msg), due, key);
}

std::size_t group_ledger::release_scheduled(time_point now, std::size_t limit) {
  std::size_t n = 0;
  for (; n < limit; ++n) {
    uint64_t key = 0;
    auto msg = schedule_.take_due(now, &key);
    if (!msg)
      break;
    auto level = level_of(*msg);
    queue_.push_back(held{std::move(msg), 0, key}, level); // bytes counted
  }
  return n;
}

std::vector<group_ledger::held> group_ledger::take_expired(time_point now,
                                                           std::size_t limit) {
  std::vector<held> result;
  if (queue_.empty())
    return result;
  queue_.for_each_level([&](auto& level) {
    while (result.size() < limit && !level.items.empty() &&
           is_expired(*level.items.front().msg, now)) {
      result.push_back(queue_.take_front(level));
      count_out(result.back());
    }
  });
  return result;
}

std::optional<group_ledger::time_point>
group_ledger::next_front_expiry() const {
  std::optional<time_point> result;
  queue_.for_each_level([&](const auto& level) {
    if (level.items.empty())
      return;
    auto& msg = *level.items.front().msg;
    if (msg.ttl_ms() == 0 && rules_.max_age_ns == 0)
      return;
    if (auto at = expiry_of(msg); at && (!result || *at < *result))
      result = at;
  });
  return result;
}

std::optional<group_ledger::time_point> group_ledger::next_scheduled() const {
  std::optional<time_point> result;
  if (!schedule_.empty())
    result = schedule_.next_due();
  if (!delayed_.empty() && (!result || delayed_.begin()->first < *result))
    result = delayed_.begin()->first;
  return result;
}

bool group_ledger::drop_oldest_pending(uint64_t* key) {
  // The oldest of the least urgent level first: the message the group would
  // deliver last among those waiting longest (docs/semantics.md).
  uint64_t ignored = 0;
  auto& out = key != nullptr ? *key : ignored;
  if (!queue_.empty()) {
    auto dropped = queue_.pop_lowest();
    out = dropped.key;
    count_out(dropped);
    return true;
  }
  if (!delayed_.empty()) {
    out = delayed_.begin()->second.key;
    count_out(delayed_.begin()->second);
    delayed_.erase(delayed_.begin());
    return true;
  }
  if (!schedule_.empty()) {
    auto msg = schedule_.take_first(&out);
    held_bytes_ -= msg->size_bytes();
    return true;
  }
  return false;
}

void group_ledger::start(uint64_t delivery_id, held msg, uint64_t member,
                         time_point deadline) {
  count_in(msg);
  flights_.emplace(delivery_id, flight{std::move(msg), member, deadline});
  deadlines_.emplace_back(deadline, delivery_id);
}

const group_ledger::flight* group_ledger::find(uint64_t delivery_id) const {
  auto i = flights_.find(delivery_id);
  return i != flights_.end() ? &i->second : nullptr;
}

std::optional<group_ledger::flight> group_ledger::finish(uint64_t delivery_id) {
  auto i = flights_.find(delivery_id);
  if (i == flights_.end())
    return std::nullopt;
  auto result = std::move(i->second);
  flights_.erase(i);
  count_out(result.message);
  // Its deadline entry stays and is skipped when met.
  return result;
}

void group_ledger::extend(uint64_t delivery_id, time_point deadline) {
  auto i = flights_.find(delivery_id);
  // Only later: an equal deadline would queue a second live entry (and
  // `expired` report the delivery twice), an earlier one break the order.
  if (i == flights_.end() || deadline <= i->second.deadline)
    return;
  i->second.deadline = deadline;
  deadlines_.emplace_back(deadline, delivery_id);
}

std::vector<uint64_t> group_ledger::expired(time_point now) {
  std::vector<uint64_t> result;
  while (!deadlines_.empty() && deadlines_.front().first <= now) {
    auto [deadline, id] = deadlines_.front();
    deadlines_.pop_front();
    auto i = flights_.find(id);
    if (i != flights_.end() && i->second.deadline == deadline)
      result.push_back(id);
  }
  drop_stale_deadlines();
  return result;
}

void group_ledger::drop_stale_deadlines() {
  // Stale entries at the head go, so the FIFO stays as small as the work
  // and its head is a live deadline.
  while (!deadlines_.empty()) {
    auto i = flights_.find(deadlines_.front().second);
    if (i != flights_.end() && i->second.deadline == deadlines_.front().first)
      break;
    deadlines_.pop_front();
  }
}

std::optional<group_ledger::time_point> group_ledger::next_due() {
  drop_stale_deadlines();
  std::optional<time_point> result;
  if (!deadlines_.empty())
    result = deadlines_.front().first;
  if (auto at = next_scheduled(); at && (!result || *at < *result))
    result = at;
  if (auto at = next_front_expiry(); at && (!result || *at < *result))
    result = at;
  return result;
}

std::vector<uint64_t> group_ledger::flights_of(uint64_t member) const {
  std::vector<uint64_t> result;
  for (auto& [id, f] : flights_)
    if (f.member == member)
      result.push_back(id);
  std::sort(result.begin(), result.end()); // delivery ids grow with time
  return result;
}

void group_ledger::delay(held msg, time_point due) {
  count_in(msg);
  delayed_.emplace(due, std::move(msg));
}

void group_ledger::release_delayed(time_point now) {
  // Due messages go to the head, the earliest due first in line.
  std::vector<held> due;
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    due.push_back(std::move(delayed_.begin()->second));
    delayed_.erase(delayed_.begin());
  }
  for (auto i = due.rbegin(); i != due.rend(); ++i) {
    auto level = level_of(*i->msg);
    queue_.push_front(std::move(*i), level); // bytes stay counted
  }
}

std::size_t group_ledger::clear() {
  auto n = held_messages();
  queue_.clear();
  schedule_.clear();
  flights_.clear();
  deadlines_.clear();
  delayed_.clear();
  held_bytes_ = 0;
  return n;
}

std::size_t group_ledger::clear_pending(std::vector<uint64_t>* keys) {
  auto n = pending();
  queue_.for_each_level([this, keys](const auto& level) {
    for (auto& h : level.items) {
      count_out(h);
      if (keys != nullptr)
        keys->push_back(h.key);
    }
  });
  for (auto& [due, h] : delayed_) {
    count_out(h);
    if (keys != nullptr)
      keys->push_back(h.key);
  }
  uint64_t key = 0;
  while (!schedule_.empty()) {
    held_bytes_ -= schedule_.take_first(&key)->size_bytes();
    if (keys != nullptr)
      keys->push_back(key);
  }
  queue_.clear();
  delayed_.clear();
  schedule_.clear();
  return n;
}

std::optional<int64_t> group_ledger::oldest_pending_accepted() const {
  std::optional<int64_t> result;
  auto consider = [&](const held& h) {
    auto t = h.msg->accepted_unix_nanos();
    if (!result || t < *result)
      result = t;
  };
  // Each level is in acceptance order but for redeliveries put back at its
  // head, which are older still: its front is its oldest. Scheduled
  // messages do not wait for a delivery until due: not counted.
  queue_.for_each_level([&](const auto& level) {
    if (!level.items.empty())
      consider(level.items.front());
  });
  for (auto& [due, h] : delayed_)
    consider(h);
  return result;
}

} // namespace tb
