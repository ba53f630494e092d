// A session's books of request/reply: the requests its client sent and
// waits on (caller side), and the requests its client received and may
// answer (responder side). Plain C++, no actors: the session drives it
// (actors/session/session_requests.cpp).
//
// A caller's request:
//
//   sent --reply--> answered (Response frame)
//     \---deadline--> timed out (DEADLINE_EXCEEDED)
//      \--session ends--> dropped (later replies counted as late)
//
// Both sides are bounded by `limits.max_pending_requests_per_session`, and
// every entry leaves by its deadline at the latest: one ordered set of
// deadlines, one wake-up (a delayed rtimeout_atom) at its head.

#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "actors/protocol.hpp"
#include "actors/ring_queue.hpp"

namespace tb {

/// The request/reply state of one session.
class request_book {
public:
  /// The clock of deadlines (CAF's actor clock, simulated in tests).
  using time_point = std::chrono::steady_clock::time_point;

  /// Says which side an entry of the deadline set belongs to.
  enum class side : uint8_t { caller, responder };

  /// Deadlines by time: (side, key).
  using deadline_map = std::multimap<time_point, std::pair<side, uint64_t>>;

  /// A request of this session's client waiting for its reply.
  struct pending {
    /// The request_id of its Request frame.
    uint64_t request_id = 0;
    /// Set for a unary Request call, answered instead of a frame.
    unary_request_ptr unary;
    /// Its entry in the deadline set.
    deadline_map::iterator deadline;
  };

  /// A request this session's client received and may answer.
  struct open {
    /// Where the reply goes.
    reply_target reply;
    /// Group requests: the group the reply acks.
    group_actor group;
    /// Group requests: the delivery the reply acks.
    uint64_t delivery_id = 0;
    /// Its entry in the deadline set.
    deadline_map::iterator deadline;
  };

  /// A fan-out request delivery not yet written.
  struct outgoing {
    /// The request message.
    message_ref message;
    /// The subscription it goes to.
    uint64_t subscription_id = 0;
    /// Its reply handle.
    uint64_t handle = 0;
    /// When the caller stops waiting (Unix nanoseconds).
    int64_t deadline_unix_nanos = 0;
  };

  /// Records a request of this client by its key (the message id).
  void add_pending(uint64_t key, uint64_t request_id, unary_request_ptr unary,
                   time_point deadline) {
    auto pos = deadlines_.emplace(deadline, std::make_pair(side::caller, key));
    pending_.emplace(key, pending{request_id, std::move(unary), pos});
  }

  /// Removes and returns the pending request `key`, if there is one.
  std::optional<pending> take_pending(uint64_t key) {
    auto i = pending_.find(key);
    if (i == pending_.end())
      return std::nullopt;
    auto result = std::move(i->second);
    deadlines_.erase(result.deadline);
    pending_.erase(i);
    return result;
  }

  /// Returns how many requests of this client wait for their reply.
  std::size_t pending_count() const noexcept {
    return pending_.size();
  }

  /// Records a request this client may answer with `handle`.
  void add_open(uint64_t handle, reply_target reply, group_actor group,
                uint64_t delivery_id, time_point expires) {
    auto pos =
        deadlines_.emplace(expires, std::make_pair(side::responder, handle));
    open_.emplace(handle,
                  open{std::move(reply), std::move(group), delivery_id, pos});
  }

  /// Removes and returns the open request `handle`, if there is one.
  std::optional<open> take_open(uint64_t handle) {
    auto i = open_.find(handle);
    if (i == open_.end())
      return std::nullopt;
    auto result = std::move(i->second);
    deadlines_.erase(result.deadline);
    open_.erase(i);
    return result;
  }

  /// Returns true if `handle` names an open request.
  bool is_open(uint64_t handle) const {
    return open_.count(handle) != 0;
  }

  /// Returns how many requests this client may still answer.
  std::size_t open_count() const noexcept {
    return open_.size();
  }

  /// Returns a fresh handle for a fan-out request (group requests use their
  /// delivery id; the top bit keeps both apart).
  uint64_t next_handle() noexcept {
    return (uint64_t{1} << 63) | next_handle_++;
  }

  /// Returns the earliest deadline, if any.
  std::optional<time_point> next_due() const {
    if (deadlines_.empty())
      return std::nullopt;
    return deadlines_.begin()->first;
  }

  /// Removes every entry due at `now` and returns the pending requests that
  /// timed out; open requests past their deadline are forgotten.
  std::vector<pending> expire(time_point now) {
    std::vector<pending> result;
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      auto [which, key] = deadlines_.begin()->second;
      if (which == side::caller) {
        auto i = pending_.find(key);
        result.push_back(std::move(i->second));
        pending_.erase(i);
      } else {
        open_.erase(key);
      }
      deadlines_.erase(deadlines_.begin());
    }
    return result;
  }

  /// Fan-out request deliveries not yet written.
  ring_queue<outgoing> outbox;
  /// When the pending wake-up is due; none if no wake-up is pending.
  std::optional<time_point> wake;

private:
  std::unordered_map<uint64_t, pending> pending_;
  std::unordered_map<uint64_t, open> open_;
  deadline_map deadlines_;
  uint64_t next_handle_ = 1;
};

} // namespace tb
