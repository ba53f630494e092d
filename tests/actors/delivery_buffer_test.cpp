// Tests of a session's buffers of fan-out deliveries: confirmation, the
// per-subscription and per-session bounds, loss reports and coalescing.

#include "actors/session/delivery_buffer.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tinybroker.pb.h"

namespace tb {
namespace {

namespace pb = tinybroker::v1;

/// Builds fan-out buffers and messages, and drains frames for inspection.
class DeliveryBuffer : public ::testing::Test {
protected:
  /// Returns a message with id `id` whose footprint is `bytes` (topic "t").
  message_ref msg(uint64_t id, size_t bytes = 10) {
    return message_record::make(id, 0, "t", std::string(bytes - 1, 'x'));
  }

  /// Pushes messages with ids `first` ... `last` to `subscription`.
  void push_range(delivery_buffer& buf, uint64_t subscription, uint64_t first,
                  uint64_t last, size_t bytes = 10) {
    for (auto id = first; id <= last; ++id)
      ASSERT_TRUE(buf.push(subscription, msg(id, bytes)));
  }

  /// Drains one frame and returns (subscription id, message id) pairs.
  std::vector<std::pair<uint64_t, uint64_t>> drain(delivery_buffer& buf,
                                                   size_t max_messages = 1024,
                                                   size_t max_bytes = 1 << 20) {
    pb::ServerFrame frame;
    auto moved = buf.drain(frame, max_messages, max_bytes, 0);
    EXPECT_TRUE(frame.has_deliveries());
    std::vector<std::pair<uint64_t, uint64_t>> result;
    for (auto& d : frame.deliveries().deliveries())
      result.emplace_back(d.subscription_id(), d.message_id());
    EXPECT_EQ(moved, result.size());
    return result;
  }

  /// Returns the pairs (`subscription`, id) for ids `first` ... `last`.
  static std::vector<std::pair<uint64_t, uint64_t>>
  ids(uint64_t subscription, uint64_t first, uint64_t last) {
    std::vector<std::pair<uint64_t, uint64_t>> result;
    for (auto id = first; id <= last; ++id)
      result.emplace_back(subscription, id);
    return result;
  }

  using pairs = std::vector<std::pair<uint64_t, uint64_t>>;
};

TEST_F(DeliveryBuffer, UnconfirmedSubscriptionHoldsDeliveriesUntilConfirm) {
  delivery_buffer buf{16, 1 << 20};
  ASSERT_TRUE(buf.add(1));
  push_range(buf, 1, 1, 3);
  EXPECT_FALSE(buf.has_ready());
  EXPECT_EQ(buf.buffered(), 3u);
  buf.confirm(1);
  EXPECT_TRUE(buf.has_ready());
  EXPECT_EQ(drain(buf), ids(1, 1, 3));
  EXPECT_FALSE(buf.has_ready());
  EXPECT_EQ(buf.buffered(), 0u);
  EXPECT_EQ(buf.buffered_bytes(), 0u);
}

TEST_F(DeliveryBuffer, DuplicateAndUnknownIdsAreRefused) {
  delivery_buffer buf{16, 1 << 20};
  EXPECT_TRUE(buf.add(1));
  EXPECT_FALSE(buf.add(1));
  EXPECT_FALSE(buf.push(2, msg(1)));
  EXPECT_FALSE(buf.remove(2));
  EXPECT_EQ(buf.subscriptions(), 1u);
}

TEST_F(DeliveryBuffer, FullSubscriptionDropsItsOldestAndReportsOnce) {
  delivery_buffer buf{3, 1 << 20};
  buf.add(1);
  buf.confirm(1);
  push_range(buf, 1, 1, 5);
  EXPECT_EQ(buf.buffered(), 3u);
  EXPECT_EQ(buf.dropped_total(), 2u);
  auto notices = buf.take_drop_notices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].subscription_id, 1u);
  EXPECT_EQ(notices[0].count, 2u);
  EXPECT_EQ(notices[0].total, 2u);
  EXPECT_TRUE(buf.take_drop_notices().empty());
  push_range(buf, 1, 6, 6);
  notices = buf.take_drop_notices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].count, 1u);
  EXPECT_EQ(notices[0].total, 3u);
  EXPECT_EQ(drain(buf), ids(1, 4, 6));
}

TEST_F(DeliveryBuffer, SessionByteBoundDropsTheOldest) {
  delivery_buffer buf{100, 50};
  buf.add(1);
  buf.confirm(1);
  push_range(buf, 1, 1, 7, 10);
  EXPECT_EQ(buf.buffered_bytes(), 50u);
  EXPECT_EQ(buf.dropped_total(), 2u);
  EXPECT_EQ(drain(buf), ids(1, 3, 7));
}

TEST_F(DeliveryBuffer, SessionByteBoundHoldsAcrossSubscriptions) {
  // The header promises at most `max_bytes` for the whole session.
  delivery_buffer buf{100, 50};
  for (uint64_t sub = 1; sub <= 3; ++sub) {
    buf.add(sub);
    buf.confirm(sub);
  }
  push_range(buf, 1, 1, 5, 10); // 50 bytes: full
  push_range(buf, 2, 6, 7, 10);
  push_range(buf, 3, 8, 9, 10);
  EXPECT_LE(buf.buffered_bytes(), 50u);
}

TEST_F(DeliveryBuffer, MessageLargerThanTheByteBoundIsStillBuffered) {
  delivery_buffer buf{100, 50};
  buf.add(1);
  buf.confirm(1);
  push_range(buf, 1, 1, 1, 80);
  EXPECT_EQ(buf.buffered(), 1u);
  EXPECT_EQ(drain(buf), ids(1, 1, 1));
}

TEST_F(DeliveryBuffer, DrainRespectsMaxMessages) {
  delivery_buffer buf{100, 1 << 20};
  buf.add(1);
  buf.confirm(1);
  push_range(buf, 1, 1, 5);
  EXPECT_EQ(drain(buf, 2), ids(1, 1, 2));
  EXPECT_EQ(drain(buf, 2), ids(1, 3, 4));
  EXPECT_EQ(drain(buf, 2), ids(1, 5, 5));
  EXPECT_FALSE(buf.has_ready());
}

TEST_F(DeliveryBuffer, DrainStopsOnceMaxBytesIsReached) {
  delivery_buffer buf{100, 1 << 20};
  buf.add(1);
  buf.confirm(1);
  push_range(buf, 1, 1, 5, 10);
  // Roughly max_bytes: messages are taken while the frame holds less.
  EXPECT_EQ(drain(buf, 100, 20), ids(1, 1, 2));
  EXPECT_EQ(drain(buf, 100, 25), ids(1, 3, 5));
}

TEST_F(DeliveryBuffer, DrainTakesAtLeastOneMessageLargerThanMaxBytes) {
  delivery_buffer buf{100, 1 << 20};
  buf.add(1);
  buf.confirm(1);
  push_range(buf, 1, 1, 2, 100);
  EXPECT_EQ(drain(buf, 100, 10), ids(1, 1, 1));
  EXPECT_EQ(drain(buf, 100, 10), ids(1, 2, 2));
}

TEST_F(DeliveryBuffer, DrainTakesSubscriptionsInTurnAcrossFrames) {
  delivery_buffer buf{100, 1 << 20};
  for (uint64_t sub = 1; sub <= 2; ++sub) {
    buf.add(sub);
    buf.confirm(sub);
  }
  push_range(buf, 1, 1, 3);
  push_range(buf, 2, 11, 13);
  EXPECT_EQ(drain(buf, 2), ids(1, 1, 2));
  EXPECT_EQ(drain(buf, 2), ids(2, 11, 12));
  EXPECT_EQ(drain(buf, 2), (pairs{{1, 3}, {2, 13}}));
}

TEST_F(DeliveryBuffer, BusySubscriptionYieldsAfterOneTurnWithinAFrame) {
  delivery_buffer buf{1000, 1 << 20};
  for (uint64_t sub = 1; sub <= 2; ++sub) {
    buf.add(sub);
    buf.confirm(sub);
  }
  push_range(buf, 1, 1, 300);
  push_range(buf, 2, 1001, 1003);
  auto frame = drain(buf);
  ASSERT_EQ(frame.size(), 303u);
  // One turn of subscription 1, then subscription 2, then the rest, FIFO.
  pairs expected = ids(1, 1, 256);
  for (auto& x : ids(2, 1001, 1003))
    expected.push_back(x);
  for (auto& x : ids(1, 257, 300))
    expected.push_back(x);
  EXPECT_EQ(frame, expected);
}

TEST_F(DeliveryBuffer, DeliveriesCarryTheMessage) {
  delivery_buffer buf{16, 1 << 20};
  buf.add(7);
  buf.confirm(7);
  buf.push(7, message_record::make(42, 123, "orders.eu", "p", "k",
                                   header_list{{"h", "v"}}));
  pb::ServerFrame frame;
  ASSERT_EQ(buf.drain(frame, 10, 1000, 0), 1u);
  auto& d = frame.deliveries().deliveries(0);
  EXPECT_EQ(d.subscription_id(), 7u);
  EXPECT_EQ(d.message_id(), 42u);
  EXPECT_EQ(d.accepted_unix_nanos(), 123);
  EXPECT_EQ(d.topic(), "orders.eu");
  EXPECT_EQ(d.payload(), "p");
  EXPECT_EQ(d.key(), "k");
  EXPECT_EQ(d.headers().at("h"), "v");
  EXPECT_EQ(d.delivery_id(), 0u);
}

TEST_F(DeliveryBuffer, RemoveFreesBytesAndLeavesNothingReady) {
  delivery_buffer buf{16, 1 << 20};
  buf.add(1);
  buf.confirm(1);
  buf.add(2);
  push_range(buf, 1, 1, 3, 10);
  push_range(buf, 2, 4, 4, 10);
  EXPECT_EQ(buf.buffered_bytes(), 40u);
  EXPECT_TRUE(buf.remove(1));
  EXPECT_EQ(buf.buffered(), 1u);
  EXPECT_EQ(buf.buffered_bytes(), 10u);
  EXPECT_FALSE(buf.contains(1));
  // Subscription 2 is unconfirmed: nothing may be written now.
  EXPECT_FALSE(buf.has_ready());
  EXPECT_TRUE(buf.remove(2));
  EXPECT_EQ(buf.buffered_bytes(), 0u);
  EXPECT_EQ(buf.subscriptions(), 0u);
}

TEST_F(DeliveryBuffer, RemovedSubscriptionReportsNoLosses) {
  delivery_buffer buf{1, 1 << 20};
  buf.add(1);
  push_range(buf, 1, 1, 3);
  buf.remove(1);
  EXPECT_TRUE(buf.take_drop_notices().empty());
}

TEST_F(DeliveryBuffer, LossesForTheLogAreCountedApartFromTheNotices) {
  delivery_buffer buf{2, 1 << 20};
  buf.add(1);
  buf.add(2);
  buf.confirm(1);
  EXPECT_FALSE(buf.has_new_losses());
  push_range(buf, 1, 1, 5);
  push_range(buf, 2, 6, 6);
  EXPECT_TRUE(buf.has_new_losses());
  // Telling the client does not reset what the log has not seen.
  EXPECT_EQ(buf.take_drop_notices().size(), 1u);
  auto losses = buf.take_new_losses();
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_EQ(losses[0].subscription_id, 1u);
  EXPECT_EQ(losses[0].count, 3u);
  EXPECT_EQ(losses[0].total, 3u);
  EXPECT_FALSE(buf.has_new_losses());
  push_range(buf, 1, 7, 7);
  losses = buf.take_new_losses();
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_EQ(losses[0].count, 1u);
  EXPECT_EQ(losses[0].total, 4u);
  EXPECT_TRUE(buf.take_new_losses().empty());
}

TEST_F(DeliveryBuffer, QueuedCountsWhatASubscriptionHolds) {
  delivery_buffer buf{16, 1 << 20};
  buf.add(1);
  buf.confirm(1);
  EXPECT_EQ(buf.queued(1), 0u);
  EXPECT_EQ(buf.queued(9), 0u);
  push_range(buf, 1, 1, 3);
  EXPECT_EQ(buf.queued(1), 3u);
  drain(buf, 2);
  EXPECT_EQ(buf.queued(1), 1u);
}

// Issue 15: a subscription that never got a message holds no queue (an
// empty std::deque costs 576 bytes), and one made on demand works as before.
TEST_F(DeliveryBuffer, IdleSubscriptionsHoldNoQueue) {
  delivery_buffer buf{4, 1 << 20};
  for (uint64_t id = 1; id <= 1000; ++id) {
    ASSERT_TRUE(buf.add(id));
    buf.confirm(id);
  }
  EXPECT_EQ(buf.allocated_queues(), 0u);
  push_range(buf, 7, 1, 6); // two dropped: the bound is 4
  EXPECT_EQ(buf.allocated_queues(), 1u);
  EXPECT_EQ(drain(buf), ids(7, 3, 6));
  EXPECT_EQ(buf.take_drop_notices().size(), 1u);
  EXPECT_TRUE(buf.remove(7));
  EXPECT_TRUE(buf.remove(8)); // never had a queue
  EXPECT_EQ(buf.allocated_queues(), 0u);
  EXPECT_EQ(buf.buffered(), 0u);
  EXPECT_EQ(buf.buffered_bytes(), 0u);
}

// -- TTL (issue 29)
// ------------------------------------------------------------

/// A message with id `id` accepted at `accepted_ms` with `ttl_ms` (topic
/// "t"), delayed by `delay_ms`.
message_ref timed(uint64_t id, int64_t accepted_ms, uint32_t ttl_ms,
                  uint32_t delay_ms = 0) {
  return message_record::make(id, accepted_ms * 1'000'000, "t", "x", "",
                              header_list{},
                              message_timing{ttl_ms, delay_ms, 0});
}

/// Milliseconds as the drain's clock (Unix nanoseconds).
constexpr int64_t at_ms(int64_t ms) {
  return ms * 1'000'000;
}

TEST_F(DeliveryBuffer, AMessagePastItsTtlIsDroppedBeforeItIsWritten) {
  delivery_buffer buf{16, 1 << 20};
  buf.add(1);
  buf.confirm(1);
  buf.push(1, timed(1, 0, 100));      // expires at 100 ms
  buf.push(1, timed(2, 0, 0));        // no TTL
  buf.push(1, timed(3, 50, 100));     // expires at 150 ms
  buf.push(1, timed(4, 0, 100, 100)); // due at 100 ms: expires at 200 ms
  pb::ServerFrame frame;
  EXPECT_EQ(buf.drain(frame, 10, 1 << 20, at_ms(120)), 3u);
  std::vector<uint64_t> written;
  for (auto& d : frame.deliveries().deliveries())
    written.push_back(d.message_id());
  EXPECT_EQ(written, (std::vector<uint64_t>{2, 3, 4}));
  EXPECT_EQ(buf.buffered(), 0u);
  EXPECT_EQ(buf.expired_total(), 1u);
  EXPECT_EQ(buf.dropped_total(), 0u); // not a slow subscriber's loss
  auto notices = buf.take_drop_notices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].subscription_id, 1u);
  EXPECT_EQ(notices[0].count, 1u);
  EXPECT_EQ(notices[0].total, 1u);
  EXPECT_EQ(notices[0].reason, drop_reason::expired);
  EXPECT_STREQ(to_string(notices[0].reason), "expired");
  EXPECT_FALSE(buf.has_new_losses()) << "expiry is not logged as a loss";
}

TEST_F(DeliveryBuffer, AFrameOfOnlyExpiredMessagesMovesNothing) {
  delivery_buffer buf{16, 1 << 20};
  buf.add(1);
  buf.confirm(1);
  for (uint64_t id = 1; id <= 5; ++id)
    buf.push(1, timed(id, 0, 10));
  pb::ServerFrame frame;
  EXPECT_EQ(buf.drain(frame, 10, 1 << 20, at_ms(10)), 0u);
  EXPECT_EQ(frame.deliveries().deliveries_size(), 0);
  EXPECT_FALSE(buf.has_ready());
  EXPECT_EQ(buf.buffered(), 0u);
  EXPECT_EQ(buf.buffered_bytes(), 0u);
  auto notices = buf.take_drop_notices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].count, 5u);
}

TEST_F(DeliveryBuffer, EachReasonGetsItsOwnNoticeWithTheCommonTotal) {
  delivery_buffer buf{2, 1 << 20};
  buf.add(1);
  buf.confirm(1);
  buf.push(1, timed(1, 0, 0));
  buf.push(1, timed(2, 0, 0));
  buf.push(1, timed(3, 0, 10)); // message 1 lost: the buffer holds 2
  pb::ServerFrame frame;
  EXPECT_EQ(buf.drain(frame, 10, 1 << 20, at_ms(20)), 1u); // 3 expired
  auto notices = buf.take_drop_notices();
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[0].reason, drop_reason::slow_subscriber);
  EXPECT_EQ(notices[0].count, 1u);
  EXPECT_EQ(notices[1].reason, drop_reason::expired);
  EXPECT_EQ(notices[1].count, 1u);
  EXPECT_EQ(notices[0].total, 2u);
  EXPECT_EQ(notices[1].total, 2u);
  EXPECT_TRUE(buf.take_drop_notices().empty());
}

} // namespace
} // namespace tb
