// The books of one consumer group: what it holds, what is in flight to whom
// and until when. Plain C++, no actors: the group actor drives it.

#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "actors/message.hpp"

namespace tb {

/// Holds a group's messages in FIFO order, tracks each delivery in flight
/// (found in O(1) by delivery id) and its ack deadline, and parks delayed
/// redeliveries.
///
/// Deadlines cost no timer each: since every deadline is "now + ack_wait"
/// with one ack_wait per group, they are issued in order and kept in a FIFO
/// (`expired` sweeps its head). Extending a deadline appends a new entry;
/// the stale one is skipped when met. Delayed redeliveries wait in a map
/// ordered by due time. `next_due` is the earliest of both heads, so the
/// group actor keeps one wake-up at that time and none per message.
class group_ledger {
public:
  /// The clock of deadlines (CAF's actor clock, simulated in tests).
  using time_point = std::chrono::steady_clock::time_point;

  /// A held message and how often it was delivered so far.
  struct held {
    /// Holds nothing yet.
    held() = default;

    /// Holds `msg`, delivered `attempts` times so far, to no one known.
    held(message_ref msg, uint32_t attempts)
        : msg(std::move(msg)), attempts(attempts) {
      // nop
    }

    /// The message.
    message_ref msg;
    /// Deliveries made so far (0 before the first).
    uint32_t attempts = 0;
    /// The members it was delivered to and came back from (a timeout, a
    /// nack, its member's end), each once, in order; null until it first
    /// comes back. Recorded when it comes back, not when it goes out, so a
    /// first delivery allocates nothing and a held message stays small
    /// (bench `--scenario queue`).
    std::unique_ptr<std::vector<uint64_t>> tries;

    /// Returns true if it was delivered to `member` before.
    bool went_to(uint64_t member) const noexcept;

    /// Records that it came back from `member`.
    void add_try(uint64_t member);

    /// Returns how many members it was delivered to.
    size_t tried_count() const noexcept {
      return tries ? tries->size() : 0;
    }

    /// Calls `f(member)` for each member it was delivered to, in order.
    template <class F>
    void for_each_try(F&& f) const {
      if (tries)
        for (auto member : *tries)
          f(member);
    }
  };

  /// A delivery awaiting its answer.
  struct flight {
    /// The message and its attempts, including this one.
    held message;
    /// The member it went to.
    uint64_t member = 0;
    /// When it is redelivered unless answered.
    time_point deadline;
  };

  /// Returns how many messages the group holds: queued, delayed, in flight.
  std::size_t held_messages() const noexcept {
    return queue_.size() + delayed_.size() + flights_.size();
  }

  /// Returns the bytes (payload, headers, key) of the held messages.
  uint64_t held_bytes() const noexcept {
    return held_bytes_;
  }

  /// Returns the messages waiting for a delivery (not in flight).
  std::size_t pending() const noexcept {
    return queue_.size() + delayed_.size();
  }

  /// Returns the deliveries in flight.
  std::size_t in_flight() const noexcept {
    return flights_.size();
  }

  /// Returns true if a message waits for a delivery now.
  bool has_ready() const noexcept {
    return !queue_.empty();
  }

  /// Returns when the earliest deadline or delay falls due; nothing if there
  /// is none. Forgets superseded deadlines at the head first, so the time
  /// returned belongs to a live delivery or a parked message.
  std::optional<time_point> next_due();

  /// Holds a new message at the end of the queue.
  void push_back(held msg);

  /// Holds a message again at the head of the queue (redelivery first).
  void push_front(held msg);

  /// Takes the message at the head of the queue; requires `has_ready()`.
  held pop_front();

  /// Drops the oldest message that is not in flight; false if there is none.
  bool drop_oldest_pending();

  /// Records a delivery in flight.
  void start(uint64_t delivery_id, held msg, uint64_t member,
             time_point deadline);

  /// Returns the delivery in flight with this id, or null.
  const flight* find(uint64_t delivery_id) const;

  /// Ends a delivery in flight (answered, expired, member gone) and returns
  /// it; nothing if the id is not in flight.
  std::optional<flight> finish(uint64_t delivery_id);

  /// Moves the deadline of a delivery in flight.
  void extend(uint64_t delivery_id, time_point deadline);

  /// Returns the deliveries whose deadline passed, oldest first.
  std::vector<uint64_t> expired(time_point now);

  /// Returns the deliveries in flight to `member`, in delivery order.
  std::vector<uint64_t> flights_of(uint64_t member) const;

  /// Parks a message for redelivery at `due`.
  void delay(held msg, time_point due);

  /// Moves the parked messages that are due to the head of the queue.
  void release_delayed(time_point now);

  /// Returns the acceptance time (Unix nanoseconds) of the oldest message
  /// waiting for a delivery, queued or delayed; nothing if none waits.
  std::optional<int64_t> oldest_pending_accepted() const;

  /// Calls `fn(delivery_id, flight)` for each delivery in flight.
  template <class F>
  void for_each_flight(F fn) const {
    for (auto& [id, f] : flights_)
      fn(id, f);
  }

  /// Forgets everything; returns how many messages were held.
  std::size_t clear();

  /// Forgets the messages waiting for a delivery, queued or delayed (a
  /// purge); deliveries in flight stay. Returns how many it forgot.
  std::size_t clear_pending();

private:
  void count_in(const held& msg);
  void count_out(const held& msg);
  void drop_stale_deadlines();

  std::deque<held> queue_;
  std::unordered_map<uint64_t, flight> flights_;
  std::deque<std::pair<time_point, uint64_t>> deadlines_;
  std::multimap<time_point, held> delayed_;
  uint64_t held_bytes_ = 0;
};

} // namespace tb
