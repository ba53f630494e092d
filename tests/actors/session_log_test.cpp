// The rules of the lines a session and a group write about themselves
// (refusals, slow consumers, the end, dead letters), on a clock the tests
// move by hand and without an actor system.

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/limited_logs.hpp"
#include "actors/session/session_log.hpp"
#include "tests/log/log_capture.hpp"
#include "tinybroker.pb.h"

namespace tb {
namespace {

using namespace std::chrono_literals;
using time_point = refusal_log::time_point;

// Returns true if `line` contains every one of `parts`.
bool has_all(const std::string& line,
             std::initializer_list<const char*> parts) {
  for (auto* part : parts)
    if (line.find(part) == std::string::npos)
      return false;
  return true;
}

class LogRules : public ::testing::Test {
protected:
  test::log_capture logs{log::level::debug};
  time_point now = time_point{} + 1000s;
};

// -- refusals -----------------------------------------------------------------

TEST_F(LogRules, ARefusalNamesPeerRequestReasonAndError) {
  refusal_log refusals{"ipv4:127.0.0.1:5000"};
  refusals.refused("ipv4:127.0.0.1:5000", "subscribe",
                   make_error_info(ec::invalid_pattern, "pattern \"a..b\""),
                   now);
  refusals.refused("ipv4:127.0.0.1:5000", "subscribe",
                   make_error_info(ec::limit_exceeded, "the limit is 3"), now);
  auto lines = logs.lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(
      has_all(lines[0], {"INFO  request refused", "peer=ipv4:127.0.0.1:5000",
                         "request=subscribe", "reason=invalid_pattern",
                         "error=\"pattern \\\"a..b\\\"\""}))
      << lines[0];
  // Limits are the broker's capacity: warn.
  EXPECT_TRUE(
      has_all(lines[1], {"WARN  request refused", "reason=limit_exceeded"}))
      << lines[1];
  EXPECT_EQ(refusals.count(), 2u);
}

TEST_F(LogRules, RefusalsBeyondTheBurstAreCountedAndReportedByTheTimer) {
  refusal_log refusals{"p"};
  auto err = make_error_info(ec::invalid_topic, "bad");
  std::optional<refusal_log::duration> wake;
  for (uint32_t i = 0; i < refusal_burst + 7; ++i) {
    auto w = refusals.refused("p", "publish", err, now);
    if (w) {
      EXPECT_FALSE(wake.has_value()) << "a second timer asked for";
      wake = w;
    }
  }
  EXPECT_EQ(logs.matching("request refused").size(), refusal_burst);
  ASSERT_TRUE(wake.has_value());
  EXPECT_EQ(*wake, refusal_interval);
  EXPECT_EQ(refusals.count(), refusal_burst + 7);
  now += *wake;
  EXPECT_FALSE(refusals.tick(now).has_value());
  auto reports = logs.matching("more refusals suppressed");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(
      has_all(reports[0], {"INFO  7 more refusals suppressed in the "
                           "last 10 s",
                           "peer=p", "kind=invalid_topic", "suppressed=7"}))
      << reports[0];
  // A new window writes again.
  refusals.refused("p", "publish", err, now);
  EXPECT_EQ(logs.matching("request refused").size(), refusal_burst + 1);
}

TEST_F(LogRules, ALevelPerReason) {
  EXPECT_EQ(refusal_level(ec::group_full), log::level::warn);
  EXPECT_EQ(refusal_level(ec::internal), log::level::warn);
  EXPECT_EQ(refusal_level(ec::shutting_down), log::level::info);
  EXPECT_EQ(refusal_level("limit_exceeded"), log::level::warn);
  EXPECT_EQ(refusal_level("invalid_topic"), log::level::info);
}

// -- slow consumers -----------------------------------------------------------

class SlowConsumer : public LogRules {
protected:
  SlowConsumer() {
    log.set_peer("ipv4:10.0.0.1:4000");
    log.subscribed(1, "orders.>");
    buffer.add(1);
    buffer.confirm(1);
  }

  // Buffers `n` messages for subscription 1 and hands any losses to the log.
  void arrive(size_t n) {
    for (size_t i = 0; i < n; ++i)
      buffer.push(1, message_record::make(++next_id_, 0, "orders.a", "x"));
    if (buffer.has_new_losses())
      log.lost(buffer.take_new_losses(), now);
  }

  // Writes everything buffered, as a client that reads again.
  void drain() {
    tinybroker::v1::ServerFrame frame;
    buffer.drain(frame, 1u << 20, 1u << 30, 0);
    log.check_caught_up(buffer, now);
  }

  session_log log;
  delivery_buffer buffer{4, 1u << 20};

private:
  uint64_t next_id_ = 0;
};

TEST_F(SlowConsumer, FirstLossWarnsWithPeerSubscriptionPatternAndCount) {
  arrive(10);
  auto lines = logs.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has_all(lines[0], {"WARN  slow consumer losing messages",
                                 "peer=ipv4:10.0.0.1:4000", "subscription=1",
                                 "pattern=orders.>", "lost=6", "total=6"}))
      << lines[0];
  EXPECT_TRUE(log.losing());
}

TEST_F(SlowConsumer, ContinuingLossesWriteAtMostOneLinePerInterval) {
  arrive(10); // 6 lost
  for (int i = 0; i < 9; ++i) {
    now += 1s;
    arrive(2); // 2 lost each time
  }
  EXPECT_EQ(logs.lines().size(), 1u);
  now += 1s; // 10 s after the first line
  arrive(2);
  auto lines = logs.matching("slow consumer still losing messages");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has_all(lines[0], {"lost=20", "total=26"})) << lines[0];
}

TEST_F(SlowConsumer, CatchingUpWritesTheTotal) {
  arrive(10);
  now += 2s;
  arrive(3);
  drain();
  auto lines = logs.matching("slow consumer caught up");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has_all(lines[0], {"INFO  slow consumer caught up",
                                 "subscription=1", "lost=3", "total=9"}))
      << lines[0];
  EXPECT_FALSE(log.losing());
  drain(); // nothing more to say
  EXPECT_EQ(logs.lines().size(), 2u);
}

TEST_F(SlowConsumer, NoCatchUpWhileMessagesAreStillBuffered) {
  arrive(10);
  log.check_caught_up(buffer, now);
  EXPECT_TRUE(log.losing());
  EXPECT_FALSE(logs.contains("caught up"));
}

TEST_F(SlowConsumer, FlappingWithinTheIntervalIsCarriedIntoTheNextLine) {
  arrive(10); // losing: 6
  now += 1s;
  drain(); // caught up (second line)
  for (int i = 0; i < 5; ++i) {
    now += 1s;
    arrive(5); // 1 lost each time: too soon for a line
    drain();
  }
  EXPECT_EQ(logs.lines().size(), 2u);
  now += 10s;
  arrive(6); // 2 lost, 10 s after the last line
  auto lines = logs.matching("slow consumer losing messages");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(has_all(lines[1], {"lost=7", "total=13"})) << lines[1];
}

TEST_F(SlowConsumer, UnsubscribingWhileLosingEndsTheLosses) {
  arrive(10);
  log.unsubscribed(1, now);
  auto lines = logs.matching("slow consumer stopped losing messages");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has_all(lines[0], {"because=unsubscribed", "total=6"}))
      << lines[0];
  EXPECT_FALSE(log.losing());
}

TEST_F(SlowConsumer, TheLastLineHasTheCountsAndHowTheSessionEnded) {
  arrive(10);
  session_stats stats;
  stats.published = 3;
  stats.delivered = 4;
  stats.subscriptions = 1;
  stats.refused = 1;
  log.refused("subscribe", make_error_info(ec::invalid_pattern, "x"), now);
  stats.dropped = buffer.dropped_total();
  stats.connected_ms = 1500;
  log.closed(stats, "client_cancelled", now);
  log.closed(stats, "again", now); // once only
  auto lines = logs.lines();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(has_all(lines[2], {"slow consumer stopped losing messages",
                                 "because=session_closed"}))
      << lines[2];
  EXPECT_TRUE(has_all(
      lines[3], {"INFO  session closed", "peer=ipv4:10.0.0.1:4000",
                 "ended=client_cancelled", "duration_ms=1500", "published=3",
                 "delivered=4", "dropped=6", "subscriptions=1", "refused=1"}))
      << lines[3];
}

// -- dead letters -------------------------------------------------------------

TEST_F(LogRules, DeadLettersNameGroupReasonTopicAndCount) {
  dead_letter_log dead{"workers"};
  dead.record({"rejected", "$dlq.workers", "", 1, 1}, now);
  dead.record({"max_deliveries", "$dlq.workers", "", 5, 2}, now);
  dead.record({"max_deliveries", "", "dead_letter_none", 5, 1}, now);
  auto lines = logs.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(has_all(lines[0], {"INFO  message dead-lettered", "group=workers",
                                 "reason=rejected", "topic=$dlq.workers",
                                 "attempts=1", "dead_lettered=1"}))
      << lines[0];
  EXPECT_TRUE(has_all(lines[1], {"WARN  message dead-lettered",
                                 "reason=max_deliveries", "dead_lettered=2"}))
      << lines[1];
  EXPECT_TRUE(has_all(lines[2], {"WARN  message dropped, not dead-lettered",
                                 "because=dead_letter_none", "dropped=1"}))
      << lines[2];
}

TEST_F(LogRules, DeadLettersAreRateLimitedPerReason) {
  dead_letter_log dead{"workers"};
  std::optional<dead_letter_log::duration> wake;
  for (uint64_t i = 1; i <= 20; ++i)
    if (auto w = dead.record({"rejected", "$dlq.workers", "", 1, i}, now))
      wake = w;
  dead.record({"max_deliveries", "$dlq.workers", "", 5, 21}, now);
  EXPECT_EQ(logs.matching("message dead-lettered").size(), refusal_burst + 1);
  ASSERT_TRUE(wake.has_value());
  now += *wake;
  dead.tick(now);
  auto reports = logs.matching("more dead letters suppressed");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(has_all(reports[0], {"15 more dead letters suppressed in the "
                                   "last 10 s",
                                   "group=workers", "kind=rejected"}))
      << reports[0];
}

TEST_F(LogRules, ADeletedGroupReportsWhatItSuppressed) {
  dead_letter_log dead{"g"};
  for (uint64_t i = 1; i <= 8; ++i)
    dead.record({"max_deliveries", "$dlq.g", "", 5, i}, now);
  now += 4s;
  dead.flush(now);
  EXPECT_TRUE(
      logs.contains("3 more dead letters suppressed in the last 4 s group=g"));
}

} // namespace
} // namespace tb
