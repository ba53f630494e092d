// The books of one consumer group: what it holds, what is in flight to whom
// and until when. Plain C++, no actors: the group actor drives it.

#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "actors/group/group_schedule.hpp"
#include "actors/group/priority_levels.hpp"
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
///
/// Issue 29: waiting messages are kept by priority (`priority_levels`,
/// strict, highest first); messages published with a delay wait apart in a
/// heap (`group_schedule`) until due, then join the back of their level; a
/// message expires when it waits past its TTL or the group's max_age, found
/// at the front of its level (as RabbitMQ expires per-message TTLs at the
/// head) and when it is taken. `next_due` includes the earliest due time
/// and the earliest expiry of a level's front.
class group_ledger {
public:
  /// The clock of deadlines (CAF's actor clock, simulated in tests).
  using time_point = std::chrono::steady_clock::time_point;

  /// How message times (Unix nanoseconds) map to the ledger's clock, and the
  /// group's settings that apply to them.
  struct timing_rules {
    /// Added to a Unix time in nanoseconds, gives the ledger's clock.
    int64_t unix_to_clock_ns = 0;
    /// The group's max_age in nanoseconds; 0 = none.
    int64_t max_age_ns = 0;
    /// The highest priority level told apart.
    uint8_t max_priority = max_message_priority;
  };

  /// A held message and how often it was delivered so far.
  struct held {
    /// Holds nothing yet.
    held() = default;

    /// Holds `msg`, delivered `attempts` times so far, to no one known,
    /// numbered `key` by its group.
    held(message_ref msg, uint32_t attempts, uint64_t key = 0)
        : msg(std::move(msg)), attempts(attempts), key(key) {
      // nop
    }

    /// The message.
    message_ref msg;
    /// Deliveries made so far (0 before the first).
    uint32_t attempts = 0;
    /// The group's number for it, in acceptance order from 1: how its
    /// replica names it (issue 32, actors/replica_types.hpp). Kept in the
    /// held struct, so numbering allocates nothing.
    uint64_t key = 0;
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

  /// Sets how times map and which group settings apply.
  void set_rules(timing_rules rules) noexcept {
    rules_ = rules;
  }

  /// Returns the rules in force.
  const timing_rules& rules() const noexcept {
    return rules_;
  }

  /// Returns the ledger's time of the Unix time `unix_ns`.
  time_point to_clock(int64_t unix_ns) const noexcept {
    return time_point{
        std::chrono::nanoseconds{unix_ns + rules_.unix_to_clock_ns}};
  }

  /// Returns the Unix time (nanoseconds) of the ledger's time `t`.
  int64_t to_unix(time_point t) const noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               t.time_since_epoch())
               .count() -
           rules_.unix_to_clock_ns;
  }

  /// Returns when `msg` expires on the ledger's clock (the earlier of its
  /// TTL and the group's max_age, both from its due time); nothing if never.
  std::optional<time_point> expiry_of(const message_record& msg) const noexcept;

  /// Returns true if `msg` expired at `now`.
  bool is_expired(const message_record& msg, time_point now) const noexcept {
    if (msg.ttl_ms() == 0 && rules_.max_age_ns == 0)
      return false;
    auto at = expiry_of(msg);
    return at && *at <= now;
  }

  /// Returns the level `msg` waits at: its priority, capped.
  uint8_t level_of(const message_record& msg) const noexcept {
    return std::min(msg.priority(), rules_.max_priority);
  }

  /// Returns how many messages the group holds: queued, scheduled, delayed,
  /// in flight.
  std::size_t held_messages() const noexcept {
    return queue_.size() + schedule_.size() + delayed_.size() + flights_.size();
  }

  /// Returns the messages held apart until a due time: scheduled by their
  /// publisher, or nacked with a delay.
  std::size_t scheduled() const noexcept {
    return schedule_.size() + delayed_.size();
  }

  /// Returns the earliest due time of a scheduled message, if any.
  std::optional<time_point> next_scheduled() const;

  /// Returns the bytes the schedule's heap allocated.
  std::size_t schedule_allocated_bytes() const noexcept {
    return schedule_.allocated_bytes();
  }

  /// Returns the bytes (payload, headers, key) of the held messages.
  uint64_t held_bytes() const noexcept {
    return held_bytes_;
  }

  /// Returns the messages waiting for a delivery (not in flight), the
  /// scheduled ones included.
  std::size_t pending() const noexcept {
    return queue_.size() + schedule_.size() + delayed_.size();
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

  /// Holds a new message at the end of the queue (of its level).
  void push_back(held msg);

  /// Holds a new message apart until `due`; `key` as in `held` (0: its id).
  void schedule(message_ref msg, time_point due, uint64_t key = 0);

  /// Moves up to `limit` scheduled messages that are due at `now` to the
  /// back of their levels, in due-time order; returns how many it moved.
  std::size_t release_scheduled(time_point now, std::size_t limit);

  /// Takes up to `limit` messages that expired at `now` from the fronts of
  /// the levels.
  std::vector<held> take_expired(time_point now, std::size_t limit);

  /// Holds a message again at the head of the queue (redelivery first).
  void push_front(held msg);

  /// Takes the message at the head of the queue; requires `has_ready()`.
  held pop_front();

  /// Drops the oldest message that is not in flight, setting `*key` (if
  /// given) to its key; false if there is none.
  bool drop_oldest_pending(uint64_t* key = nullptr);

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
  /// purge); deliveries in flight stay. Returns how many it forgot, their
  /// keys appended to `*keys` if given.
  std::size_t clear_pending(std::vector<uint64_t>* keys = nullptr);

  /// Calls `f(key, msg, attempts, in_flight)` for each held message, in no
  /// particular order (a replica's snapshot sorts them by key).
  template <class F>
  void for_each_held(F f) const {
    queue_.for_each_level([&](const auto& level) {
      for (auto& h : level.items)
        f(h.key, h.msg, h.attempts, false);
    });
    schedule_.for_each([&](uint64_t key, const message_ref& msg) {
      f(key, msg, uint32_t{0}, false);
    });
    for (auto& [due, h] : delayed_)
      f(h.key, h.msg, h.attempts, false);
    for (auto& [id, fl] : flights_)
      f(fl.message.key, fl.message.msg, fl.message.attempts, true);
  }

private:
  void count_in(const held& msg);
  void count_out(const held& msg);
  void drop_stale_deadlines();
  std::optional<time_point> next_front_expiry() const;

  timing_rules rules_;
  priority_levels<held> queue_;
  group_schedule schedule_;
  std::unordered_map<uint64_t, flight> flights_;
  std::deque<std::pair<time_point, uint64_t>> deadlines_;
  std::multimap<time_point, held> delayed_;
  uint64_t held_bytes_ = 0;
};

} // namespace tb
