// A session's bounded buffers of fan-out deliveries not yet written.

#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "actors/message.hpp"
#include "actors/ring_queue.hpp"

namespace tinybroker::v1 {
class Delivery;
class ServerFrame;
} // namespace tinybroker::v1

namespace tb {

/// Writes `msg` as a delivery to `subscription_id` into `out`.
void to_delivery(const message_record& msg, uint64_t subscription_id,
                 tinybroker::v1::Delivery& out);

/// Why a fan-out subscription lost messages.
enum class drop_reason : uint8_t {
  /// Its buffer, or its session's, was full: it lost its oldest.
  slow_subscriber,
  /// A message's TTL passed before it could be written.
  expired,
};

/// Returns the name of `x` in the Dropped frame: `"slow_subscriber"` or
/// `"expired"`.
inline const char* to_string(drop_reason x) noexcept {
  return x == drop_reason::expired ? "expired" : "slow_subscriber";
}

/// Tells a subscriber how many messages it lost, and why.
struct drop_notice {
  /// The subscription that lost messages.
  uint64_t subscription_id = 0;
  /// Lost for `reason` since the previous notice.
  uint64_t count = 0;
  /// Lost in total, for either reason.
  uint64_t total = 0;
  /// Why.
  drop_reason reason = drop_reason::slow_subscriber;
};

/// Holds each fan-out subscription's deliveries until the stream can take
/// them, and coalesces them into frames.
///
/// Each subscription holds at most `per_subscription` messages and the
/// session at most `max_bytes` bytes of messages; a full subscription loses
/// its oldest message (spec 5), a full session the oldest message of its
/// largest subscription, and the loss is reported by the next
/// `take_drop_notices()`. A message whose TTL passed while it waited is
/// dropped when its turn to be written comes, and reported the same way
/// with its own reason (issue 29). Deliveries of a subscription that is not
/// yet confirmed stay buffered until `confirm()`, so that the client sees
/// the Subscribed frame before them.
class delivery_buffer {
public:
  /// Creates an empty buffer with the given bounds.
  delivery_buffer(std::size_t per_subscription, std::size_t max_bytes);

  /// Adds a subscription, unconfirmed; returns false if the id is in use.
  bool add(uint64_t subscription_id);

  /// Marks a subscription confirmed: its deliveries may now be written.
  void confirm(uint64_t subscription_id);

  /// Removes a subscription and what it buffered; returns false if unknown.
  bool remove(uint64_t subscription_id);

  /// Returns true if the subscription exists.
  bool contains(uint64_t subscription_id) const {
    return subs_.count(subscription_id) != 0;
  }

  /// Returns true if the subscription exists and is confirmed (its
  /// Subscribed frame is queued).
  bool confirmed(uint64_t subscription_id) const {
    auto i = subs_.find(subscription_id);
    return i != subs_.end() && i->second.confirmed;
  }

  /// Returns the number of subscriptions.
  std::size_t subscriptions() const noexcept {
    return subs_.size();
  }

  /// Buffers `msg` for a subscription, dropping that subscription's oldest
  /// messages when a bound is hit. Returns false if the id is unknown.
  bool push(uint64_t subscription_id, const message_ref& msg);

  /// Returns true if a confirmed subscription has messages to write.
  bool has_ready() const noexcept {
    return !ready_.empty();
  }

  /// Moves up to `max_messages` messages (and roughly `max_bytes` bytes,
  /// at least one message) into `frame` as a Deliveries frame, taking
  /// subscriptions in turn; returns how many it moved (possibly none).
  /// Messages that expired at `now_unix_nanos` are dropped on the way and
  /// reported by the next `take_drop_notices()`.
  std::size_t drain(tinybroker::v1::ServerFrame& frame,
                    std::size_t max_messages, std::size_t max_bytes,
                    int64_t now_unix_nanos);

  /// Returns and resets the losses not yet reported.
  std::vector<drop_notice> take_drop_notices();

  /// Returns true if a subscription lost messages since the last
  /// `take_new_losses()` (slow subscribers only: expiry is the publisher's
  /// choice, not a problem to log).
  bool has_new_losses() const noexcept {
    return !unlogged_.empty();
  }

  /// Returns and resets the losses since the last call, for the session's
  /// log; independent of `take_drop_notices()`, which tells the client.
  std::vector<drop_notice> take_new_losses();

  /// Returns the number of messages buffered for a subscription (0 if the
  /// id is unknown).
  std::size_t queued(uint64_t subscription_id) const;

  /// Returns how many subscriptions hold a message queue: only those that
  /// were ever given a message (for tests and memory accounting).
  std::size_t allocated_queues() const noexcept;

  /// Returns the number of buffered messages.
  std::size_t buffered() const noexcept {
    return buffered_;
  }

  /// Returns the bytes of buffered messages.
  std::size_t buffered_bytes() const noexcept {
    return buffered_bytes_;
  }

  /// Returns how many messages were dropped for slow subscribers in total.
  uint64_t dropped_total() const noexcept {
    return dropped_total_;
  }

  /// Returns how many messages were dropped unwritten for their TTL.
  uint64_t expired_total() const noexcept {
    return expired_total_;
  }

private:
  struct subscription {
    // Made on the first message: an empty std::deque already allocates 576
    // bytes (libstdc++), which most subscriptions would hold for nothing.
    std::optional<std::deque<message_ref>> queue;
    bool confirmed = false;
    bool queued_ready = false;
    uint64_t unreported = 0;
    uint64_t unreported_expired = 0;
    uint64_t unlogged = 0;
    uint64_t dropped = 0;

    std::size_t size() const noexcept {
      return queue ? queue->size() : 0;
    }

    bool empty() const noexcept {
      return size() == 0;
    }
  };

  using subscription_map = std::unordered_map<uint64_t, subscription>;

  void drop_oldest(uint64_t id, subscription& sub);
  void drop_expired(uint64_t id, subscription& sub);
  void note_unreported(uint64_t id, const subscription& sub);
  subscription_map::iterator largest_queue();
  void mark_ready(uint64_t id, subscription& sub);

  std::size_t per_subscription_;
  std::size_t max_bytes_;
  subscription_map subs_;
  ring_queue<uint64_t> ready_;     // confirmed subscriptions with messages
  std::vector<uint64_t> lossy_;    // subscriptions with unreported losses
  std::vector<uint64_t> unlogged_; // subscriptions with losses not logged
  std::size_t buffered_ = 0;
  std::size_t buffered_bytes_ = 0;
  uint64_t dropped_total_ = 0;
  uint64_t expired_total_ = 0;
};

} // namespace tb
