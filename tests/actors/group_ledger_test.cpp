// Unit tests of group_ledger, the books of one consumer group: the FIFO of
// held messages, deliveries in flight and their deadlines, parked
// redeliveries, and the count of what is held.

#include "actors/group/group_ledger.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tb {
namespace {

using namespace std::chrono_literals;
using held = group_ledger::held;
using ids = std::vector<uint64_t>;
using strings = std::vector<std::string>;

/// A fresh ledger and a clock origin.
class GroupLedger : public ::testing::Test {
protected:
  /// Returns a held message whose payload (and size) is `payload`.
  static held msg(const std::string& payload, uint32_t attempts = 0) {
    return held{message_record::make(0, 0, "t.a", payload), attempts};
  }

  /// Returns the time `offset` after the origin.
  static group_ledger::time_point at(std::chrono::milliseconds offset) {
    return group_ledger::time_point{} + 1h + offset;
  }

  /// Pops every ready message and returns their payloads, in order.
  strings drain() {
    strings result;
    while (ledger.has_ready())
      result.emplace_back(ledger.pop_front().msg->payload());
    return result;
  }

  /// Checks the three counts and the held bytes.
  void expect_held(size_t pending, size_t in_flight, uint64_t bytes) {
    EXPECT_EQ(ledger.pending(), pending);
    EXPECT_EQ(ledger.in_flight(), in_flight);
    EXPECT_EQ(ledger.held_messages(), pending + in_flight);
    EXPECT_EQ(ledger.held_bytes(), bytes);
  }

  group_ledger ledger;
};

TEST_F(GroupLedger, PopsMessagesInTheOrderTheyWereHeld) {
  for (auto payload : {"a", "b", "c"})
    ledger.push_back(msg(payload));
  EXPECT_TRUE(ledger.has_ready());
  EXPECT_EQ(drain(), (strings{"a", "b", "c"}));
  EXPECT_FALSE(ledger.has_ready());
  expect_held(0, 0, 0);
}

TEST_F(GroupLedger, PushFrontPutsARedeliveryAheadOfEverythingQueued) {
  ledger.push_back(msg("a"));
  ledger.push_back(msg("b"));
  ledger.push_front(msg("r", 1));
  EXPECT_EQ(ledger.pop_front().attempts, 1u);
  EXPECT_EQ(drain(), (strings{"a", "b"}));
}

TEST_F(GroupLedger, FindAndFinishAddressOneDeliveryById) {
  ledger.start(7, msg("a", 1), 1, at(1s));
  ledger.start(8, msg("b", 2), 2, at(1s));
  auto* f = ledger.find(8);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->message.msg->payload(), "b");
  EXPECT_EQ(f->message.attempts, 2u);
  EXPECT_EQ(f->member, 2u);
  EXPECT_EQ(f->deadline, at(1s));
  EXPECT_EQ(ledger.find(9), nullptr);
  auto done = ledger.finish(7);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->message.msg->payload(), "a");
  EXPECT_EQ(done->member, 1u);
  EXPECT_EQ(ledger.find(7), nullptr);
  EXPECT_FALSE(ledger.finish(7).has_value()); // answered twice
  EXPECT_FALSE(ledger.finish(9).has_value()); // never delivered
  EXPECT_NE(ledger.find(8), nullptr);
  EXPECT_EQ(ledger.in_flight(), 1u);
}

TEST_F(GroupLedger, ExtendMovesTheDeadlineAndTheOldOneIsSkipped) {
  ledger.start(1, msg("a"), 1, at(1s));
  ledger.start(2, msg("b"), 1, at(1s));
  ledger.extend(1, at(3s));
  EXPECT_EQ(ledger.find(1)->deadline, at(3s));
  EXPECT_EQ(ledger.expired(at(1s)), (ids{2}));
  ledger.finish(2);
  EXPECT_EQ(ledger.expired(at(2s)), ids{});
  EXPECT_EQ(ledger.expired(at(3s)), (ids{1}));
}

TEST_F(GroupLedger, ExtendingTwiceToTheSameDeadlineExpiresOnce) {
  ledger.start(1, msg("a"), 1, at(1s));
  ledger.extend(1, at(2s));
  ledger.extend(1, at(2s)); // e.g. the same id twice in one InProgress
  ledger.extend(1, at(1s)); // no earlier than it is
  EXPECT_EQ(ledger.expired(at(5s)), (ids{1}));
}

TEST_F(GroupLedger, ExtendOfAnUnknownDeliveryChangesNothing) {
  ledger.extend(42, at(1s));
  EXPECT_EQ(ledger.expired(at(5s)), ids{});
  EXPECT_EQ(ledger.next_due(), std::nullopt);
}

TEST_F(GroupLedger, ExpiredReturnsOnlyPassedDeadlinesOldestFirst) {
  ledger.start(1, msg("a"), 1, at(1s));
  ledger.start(2, msg("b"), 2, at(2s));
  ledger.start(3, msg("c"), 1, at(3s));
  ledger.start(4, msg("d"), 1, at(4s));
  ledger.finish(3); // answered: never expires
  EXPECT_EQ(ledger.expired(at(500ms)), ids{});
  EXPECT_EQ(ledger.expired(at(3500ms)), (ids{1, 2}));
  // Reported once: the ledger leaves ending them to its caller.
  EXPECT_EQ(ledger.in_flight(), 3u);
  EXPECT_EQ(ledger.expired(at(3500ms)), ids{});
  EXPECT_EQ(ledger.expired(at(4s)), (ids{4}));
}

TEST_F(GroupLedger, NextDueIsTheEarliestLiveDeadlineOrDelay) {
  EXPECT_EQ(ledger.next_due(), std::nullopt);
  ledger.start(1, msg("a"), 1, at(1s));
  ledger.start(2, msg("b"), 1, at(2s));
  EXPECT_EQ(ledger.next_due(), at(1s));
  ledger.delay(msg("parked", 1), at(1500ms));
  ledger.finish(1); // acked: its deadline no longer counts
  EXPECT_EQ(ledger.next_due(), at(1500ms));
  ledger.delay(msg("soon", 1), at(200ms));
  EXPECT_EQ(ledger.next_due(), at(200ms));
  ledger.release_delayed(at(1500ms));
  EXPECT_EQ(ledger.next_due(), at(2s));
  ledger.extend(2, at(3s)); // the 2 s entry is superseded
  EXPECT_EQ(ledger.next_due(), at(3s));
}

TEST_F(GroupLedger, HeldRemembersEachMemberItWentToOnce) {
  auto held = msg("a");
  EXPECT_FALSE(held.went_to(1));
  held.add_try(1);
  held.add_try(2);
  held.add_try(1);
  EXPECT_TRUE(held.went_to(1));
  EXPECT_TRUE(held.went_to(2));
  held.add_try(3);
  held.add_try(2);
  EXPECT_FALSE(held.went_to(4));
  EXPECT_EQ(held.tried_count(), 3u);
  ids tried;
  held.for_each_try([&](uint64_t member) { tried.push_back(member); });
  EXPECT_EQ(tried, (ids{1, 2, 3}));
}

TEST_F(GroupLedger, FlightsOfListsAMembersDeliveriesInDeliveryOrder) {
  ledger.start(10, msg("a"), 1, at(1s));
  ledger.start(11, msg("b"), 2, at(1s));
  ledger.start(12, msg("c"), 1, at(1s));
  ledger.start(13, msg("d"), 1, at(1s));
  EXPECT_EQ(ledger.flights_of(1), (ids{10, 12, 13}));
  EXPECT_EQ(ledger.flights_of(2), (ids{11}));
  EXPECT_EQ(ledger.flights_of(3), ids{});
  ledger.finish(12);
  EXPECT_EQ(ledger.flights_of(1), (ids{10, 13}));
}

TEST_F(GroupLedger, DelayedMessagesReturnToTheHeadWhenDueEarliestFirst) {
  ledger.push_back(msg("q"));
  ledger.delay(msg("late", 1), at(3s));
  ledger.delay(msg("early", 1), at(1s));
  ledger.delay(msg("middle", 1), at(2s));
  EXPECT_EQ(ledger.next_due(), at(1s));
  EXPECT_EQ(ledger.pending(), 4u);
  ledger.release_delayed(at(500ms));
  EXPECT_EQ(drain(), (strings{"q"}));
  ledger.push_back(msg("q2"));
  ledger.release_delayed(at(2s));
  EXPECT_EQ(drain(), (strings{"early", "middle", "q2"}));
  EXPECT_EQ(ledger.pending(), 1u);
  ledger.release_delayed(at(3s));
  EXPECT_EQ(drain(), (strings{"late"}));
  EXPECT_EQ(ledger.next_due(), std::nullopt);
}

TEST_F(GroupLedger, DropOldestPendingTakesQueuedThenDelayedNeverInFlight) {
  ledger.start(1, msg("flying"), 1, at(1s));
  ledger.delay(msg("parked", 1), at(1s));
  ledger.push_back(msg("old"));
  ledger.push_back(msg("new"));
  EXPECT_TRUE(ledger.drop_oldest_pending());
  EXPECT_TRUE(ledger.drop_oldest_pending());
  EXPECT_EQ(ledger.pending(), 1u);
  EXPECT_FALSE(ledger.has_ready()); // "new" went second, "parked" is left
  EXPECT_TRUE(ledger.drop_oldest_pending());
  EXPECT_FALSE(ledger.drop_oldest_pending());
  ASSERT_NE(ledger.find(1), nullptr);
  expect_held(0, 1, 6);
}

TEST_F(GroupLedger, HeldCountsFollowEveryOperation) {
  expect_held(0, 0, 0);
  ledger.push_back(msg("aa"));    // queued: aa
  ledger.push_back(msg("bbb"));   // queued: aa bbb
  ledger.push_front(msg("c", 1)); // queued: c aa bbb
  expect_held(3, 0, 6);
  auto first = ledger.pop_front(); // a dispatch: pop, then start
  expect_held(2, 0, 5);
  ledger.start(1, std::move(first), 1, at(1s));
  ledger.start(2, ledger.pop_front(), 1, at(1s));
  expect_held(1, 2, 6);
  ledger.extend(1, at(2s));
  ledger.expired(at(5s)); // reports, ends nothing
  expect_held(1, 2, 6);
  ledger.delay(std::move(ledger.finish(2)->message),
               at(1s)); // nack with a delay
  expect_held(2, 1, 6);
  ledger.release_delayed(at(1s));
  expect_held(2, 1, 6);
  ledger.finish(1); // ack
  expect_held(2, 0, 5);
  EXPECT_TRUE(ledger.drop_oldest_pending()); // aa
  expect_held(1, 0, 3);
  ledger.start(3, ledger.pop_front(), 2, at(1s));
  ledger.push_back(msg("dddd"));
  ledger.delay(msg("e"), at(9s));
  expect_held(2, 1, 8);
  EXPECT_EQ(ledger.clear(), 3u);
  expect_held(0, 0, 0);
  EXPECT_EQ(ledger.next_due(), std::nullopt);
  EXPECT_EQ(ledger.expired(at(10s)), ids{});
}

} // namespace
} // namespace tb
