// A topic shard's delayed fan-out messages: held until their due time and
// then handed to the fan-out subscriptions they were published to, in
// due-time order; bounded per topic and per broker.

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/protocol.hpp"

namespace tb {

class topic_quota;

/// One delayed fan-out message as a shard holds it (32 bytes, plus the
/// message and its route, which are shared).
struct delayed_entry {
  /// When it falls due, on the shard's clock.
  std::chrono::steady_clock::time_point due;
  /// The message.
  message_ref message;
  /// The route it was published on: its fan-out subscriptions get it.
  route_ref route;
};

/// Holds delayed fan-out messages in a binary heap ordered by due time and,
/// for equal due times, by message id (acceptance order), so that one
/// publisher's messages due together leave in publish order.
///
/// Bounds: at most `per_topic` messages of one topic, and, over all shards,
/// the messages `quota` allows (`limits.max_delayed_fanout`). Holding costs
/// O(log n), taking each due message O(log n).
class delayed_fanout {
public:
  /// Clock of the due times: the actor clock (simulated in tests).
  using time_point = std::chrono::steady_clock::time_point;

  /// Holds at most `per_topic` messages per topic and what `quota` allows
  /// over all shards (no broker-wide bound if `quota` is null).
  delayed_fanout(std::size_t per_topic, std::shared_ptr<topic_quota> quota);

  /// Holds `message` until `due` for the fan-out subscriptions of `route`;
  /// returns an error naming the limit (and holds nothing) when a bound is
  /// reached.
  error_info hold(time_point due, message_ref message, route_ref route);

  /// Returns the earliest due time, if anything is held.
  std::optional<time_point> next_due() const;

  /// Removes and returns the messages due at `now`, at most `max`, in
  /// due-time order.
  std::vector<delayed_entry> take_due(time_point now, std::size_t max);

  /// Returns how many messages are held.
  std::size_t size() const noexcept {
    return heap_.size();
  }

  /// Returns how many messages of `topic` are held.
  std::size_t held_for(const std::string& topic) const;

  /// Returns how many messages were refused at a bound so far.
  uint64_t refused() const noexcept {
    return refused_;
  }

  /// Returns how many messages fell due so far.
  uint64_t fired() const noexcept {
    return fired_;
  }

  /// Holds nothing more: releases what it holds from the quota.
  ~delayed_fanout();

  delayed_fanout(const delayed_fanout&) = delete;
  delayed_fanout& operator=(const delayed_fanout&) = delete;
  delayed_fanout(delayed_fanout&&) = default;
  delayed_fanout& operator=(delayed_fanout&&) = default;

private:
  std::size_t per_topic_;
  std::shared_ptr<topic_quota> quota_;
  std::vector<delayed_entry> heap_; // std::push_heap order: earliest first
  std::unordered_map<std::string, std::size_t> per_topic_count_;
  uint64_t refused_ = 0;
  uint64_t fired_ = 0;
};

} // namespace tb
