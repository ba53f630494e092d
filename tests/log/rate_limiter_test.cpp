// The rate limiter of log lines, on a clock the tests move by hand.

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "log/rate_limiter.hpp"
#include "tests/log/log_capture.hpp"

namespace tb::log {
namespace {

using namespace std::chrono_literals;

class RateLimiterTest : public ::testing::Test {
protected:
  // Counts how many of `n` events of `kind` at the current time may write.
  int admitted(std::string_view kind, int n) {
    int result = 0;
    for (int i = 0; i < n; ++i)
      result += limiter.admit(kind, now).write ? 1 : 0;
    return result;
  }

  rate_limiter limiter{3, 10s};
  rate_limiter::time_point now = rate_limiter::time_point{} + 1000s;
};

TEST_F(RateLimiterTest, WritesTheFirstBurstOfAWindowAndCountsTheRest) {
  EXPECT_EQ(admitted("limit_exceeded", 10), 3);
  EXPECT_EQ(limiter.suppressed_total(), 7u);
  now += 9s;
  EXPECT_EQ(admitted("limit_exceeded", 1), 0);
  EXPECT_EQ(limiter.suppressed_total(), 8u);
}

TEST_F(RateLimiterTest, KindsHaveTheirOwnWindows) {
  EXPECT_EQ(admitted("limit_exceeded", 5), 3);
  EXPECT_EQ(admitted("invalid_topic", 5), 3);
  EXPECT_EQ(limiter.suppressed_total(), 4u);
}

TEST_F(RateLimiterTest, TheNextEventAfterTheWindowCarriesItsReport) {
  admitted("limit_exceeded", 10);
  now += 10s;
  auto v = limiter.admit("limit_exceeded", now);
  EXPECT_TRUE(v.write);
  ASSERT_TRUE(v.ended.has_value());
  EXPECT_EQ(v.ended->kind, "limit_exceeded");
  EXPECT_EQ(v.ended->count, 7u);
  EXPECT_EQ(v.ended->window, 10s);
  // The new window opened with that event: two more may write.
  EXPECT_EQ(admitted("limit_exceeded", 3), 2);
}

TEST_F(RateLimiterTest, AWindowWithoutSuppressedEventsEndsSilently) {
  admitted("invalid_topic", 3);
  now += 11s;
  auto v = limiter.admit("invalid_topic", now);
  EXPECT_TRUE(v.write);
  EXPECT_FALSE(v.ended.has_value());
  EXPECT_FALSE(limiter.next_report().has_value());
  EXPECT_TRUE(limiter.take_ended(now + 1h).empty());
}

TEST_F(RateLimiterTest, NextReportIsTheEndOfTheFirstWindowWithSuppressions) {
  EXPECT_FALSE(limiter.next_report().has_value());
  admitted("a", 3); // none suppressed: no report needed
  EXPECT_FALSE(limiter.next_report().has_value());
  auto a_start = now;
  now += 2s;
  admitted("b", 4);
  EXPECT_EQ(limiter.next_report(), now + 10s);
  admitted("a", 1);
  EXPECT_EQ(limiter.next_report(), a_start + 10s);
}

TEST_F(RateLimiterTest, TakeEndedReportsOnlyWindowsThatEnded) {
  admitted("a", 5);
  now += 4s;
  admitted("b", 6);
  now += 6s; // a's window ended, b's has 4 s to go
  auto reports = limiter.take_ended(now);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kind, "a");
  EXPECT_EQ(reports[0].count, 2u);
  EXPECT_EQ(limiter.next_report(), now + 4s);
  // Reported once: a's window is gone, and its next event opens a new one.
  EXPECT_TRUE(limiter.take_ended(now).empty());
  auto v = limiter.admit("a", now);
  EXPECT_TRUE(v.write);
  EXPECT_FALSE(v.ended.has_value());
  now += 4s;
  reports = limiter.take_ended(now);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kind, "b");
  EXPECT_EQ(reports[0].count, 3u);
}

TEST_F(RateLimiterTest, TakeAllReportsOpenWindowsWithTheirLength) {
  admitted("a", 4);
  now += 2500ms;
  auto reports = limiter.take_all(now);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].count, 1u);
  EXPECT_EQ(reports[0].window, 2500ms);
  EXPECT_FALSE(limiter.next_report().has_value());
  EXPECT_EQ(admitted("a", 4), 3); // a fresh window
}

TEST_F(RateLimiterTest, TimerIsAskedForOnceUntilTheReportsAreTaken) {
  EXPECT_FALSE(limiter.timer_needed(now).has_value());
  admitted("a", 4);
  EXPECT_EQ(limiter.timer_needed(now), 10s);
  now += 3s;
  admitted("b", 4); // a timer is already asked for
  EXPECT_FALSE(limiter.timer_needed(now).has_value());
  now += 7s; // the timer fires: a's window ended, b's has 3 s to go
  ASSERT_EQ(limiter.take_ended(now).size(), 1u);
  EXPECT_EQ(limiter.timer_needed(now), 3s);
  now += 3s;
  ASSERT_EQ(limiter.take_ended(now).size(), 1u);
  EXPECT_FALSE(limiter.timer_needed(now).has_value());
}

TEST_F(RateLimiterTest, ABurstOfZeroSuppressesEverything) {
  rate_limiter silent{0, 10s};
  EXPECT_FALSE(silent.admit("a", now).write);
  EXPECT_EQ(silent.suppressed_total(), 1u);
}

TEST(RateLimiterReport, SuppressedLineSaysHowManyInWhatTime) {
  test::log_capture logs;
  write_suppressed(level::warn, "refusals",
                   rate_limiter::suppressed{"limit_exceeded", 37, 10s},
                   {{"peer", "ipv4:127.0.0.1:5000"}});
  ASSERT_EQ(logs.lines().size(), 1u);
  EXPECT_NE(logs.lines()[0].find("WARN  37 more refusals suppressed in the "
                                 "last 10 s peer=ipv4:127.0.0.1:5000 "
                                 "kind=limit_exceeded suppressed=37"),
            std::string::npos)
      << logs.lines()[0];
}

TEST(RateLimiterReport, SecondsAreRoundedToTenths) {
  EXPECT_EQ(format_seconds(10s), "10");
  EXPECT_EQ(format_seconds(2500ms), "2.5");
  EXPECT_EQ(format_seconds(340ms), "0.3");
  EXPECT_EQ(format_seconds(0ms), "0");
}

} // namespace
} // namespace tb::log
