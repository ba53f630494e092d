// Messages a group holds apart until their due time (issue 29): a binary
// min-heap in one vector. Plain C++, no actors.

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "actors/message.hpp"

namespace tb {

/// Messages scheduled for a time, taken out in due-time order (publish order
/// among equal due times). 24 bytes per message in the heap's vector (its
/// capacity at most twice its size while it grows; a large heap gives its
/// memory back once at most 16,384 entries remain),
/// O(log n) to add or take one. Guarded by `bench/group_ledger_bench.cpp`
/// (`BM_ScheduleThenFire`).
class group_schedule {
public:
  /// The clock of due times (CAF's actor clock, simulated in tests).
  using time_point = std::chrono::steady_clock::time_point;

  /// Returns how many messages wait.
  std::size_t size() const noexcept {
    return heap_.size();
  }

  /// Returns true if none waits.
  bool empty() const noexcept {
    return heap_.empty();
  }

  /// Returns the earliest due time; requires `!empty()`.
  time_point next_due() const noexcept {
    return time_point{time_point::duration{heap_.front().due}};
  }

  /// Holds `msg` until `due`. `key` orders equal due times and comes back
  /// with the message: the group's number for it (acceptance order, issue
  /// 32); 0 takes the message's id.
  void add(message_ref msg, time_point due, uint64_t key = 0);

  /// Takes the message due first if it is due at `now`, setting `*key` (if
  /// given) to its key; an empty reference if none is.
  message_ref take_due(time_point now, uint64_t* key = nullptr);

  /// Takes the message due first, due or not, setting `*key` (if given) to
  /// its key; requires `!empty()`.
  message_ref take_first(uint64_t* key = nullptr);

  /// Calls `f(key, msg)` for each message, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (auto& x : heap_)
      f(x.seq, x.msg);
  }

  /// Returns the bytes the heap's vector holds (capacity, not size).
  std::size_t allocated_bytes() const noexcept {
    return heap_.capacity() * sizeof(entry);
  }

  /// Forgets everything.
  void clear() {
    heap_.clear();
    heap_.shrink_to_fit();
  }

private:
  struct entry {
    int64_t due;  // time_since_epoch of the due time_point
    uint64_t seq; // its key: acceptance order among equal due times
    message_ref msg;
  };

  message_ref pop(uint64_t* key);

  std::vector<entry> heap_;
};

} // namespace tb
