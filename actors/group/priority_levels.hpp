// The waiting messages of a group by priority: one FIFO per level that is in
// use, the highest level first (issue 29). Plain C++, no actors.

#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

namespace tb {

/// FIFOs of `T` by priority level (0-9), served strictly highest level
/// first. A level's FIFO exists from its first item on, so a group whose
/// messages all have one priority keeps one FIFO and pays one comparison
/// per push and pop over a plain deque (bench `--scenario queue`).
template <class T>
class priority_levels {
public:
  /// One level in use.
  struct level {
    /// Its priority.
    uint8_t priority = 0;
    /// Its items, first in line first.
    std::deque<T> items;
  };

  /// Returns true if no level holds an item.
  bool empty() const noexcept {
    return size_ == 0;
  }

  /// Returns how many items all levels hold.
  std::size_t size() const noexcept {
    return size_;
  }

  /// Appends `x` to the FIFO of `priority`.
  void push_back(T x, uint8_t priority) {
    find(priority).items.push_back(std::move(x));
    ++size_;
  }

  /// Puts `x` first in line in the FIFO of `priority`.
  void push_front(T x, uint8_t priority) {
    find(priority).items.push_front(std::move(x));
    ++size_;
  }

  /// Takes the first item of the highest level that holds one; requires
  /// `!empty()`.
  T pop_front() {
    for (auto& l : levels_)
      if (!l->items.empty())
        return take(*l);
    return T{}; // unreachable when the precondition holds
  }

  /// Takes the first item of the lowest level that holds one (the one
  /// `drop_oldest` drops); requires `!empty()`.
  T pop_lowest() {
    for (auto i = levels_.rbegin(); i != levels_.rend(); ++i)
      if (!(*i)->items.empty())
        return take(**i);
    return T{};
  }

  /// Calls `f(level&)` for each level, highest first; `f` may take items
  /// from its front with `take_front`.
  template <class F>
  void for_each_level(F&& f) {
    for (auto& l : levels_)
      f(*l);
  }

  /// Calls `f(level)` for each level, highest first.
  template <class F>
  void for_each_level(F&& f) const {
    for (auto& l : levels_)
      f(static_cast<const level&>(*l));
  }

  /// Takes the first item of `l`, a level of this; requires items in it.
  T take_front(level& l) {
    return take(l);
  }

  /// Forgets every item.
  void clear() {
    levels_.clear();
    size_ = 0;
  }

private:
  T take(level& l) {
    auto x = std::move(l.items.front());
    l.items.pop_front();
    --size_;
    return x;
  }

  level& find(uint8_t priority) {
    // The common case: one level, the one asked for.
    if (!levels_.empty() && levels_.front()->priority == priority)
      return *levels_.front();
    auto i = levels_.begin();
    while (i != levels_.end() && (*i)->priority > priority)
      ++i;
    if (i != levels_.end() && (*i)->priority == priority)
      return **i;
    auto fresh = std::make_unique<level>();
    fresh->priority = priority;
    return **levels_.insert(i, std::move(fresh));
  }

  // By priority, highest first; each level apart, so that adding one moves
  // pointers, not queues.
  std::vector<std::unique_ptr<level>> levels_;
  std::size_t size_ = 0;
};

} // namespace tb
