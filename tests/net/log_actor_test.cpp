// The gRPC side's log actor on CAF's test coordinator: refusals of calls and
// streams (rate limited, reported on its timer) and the periodic summary
// (its line, its period, and no timer when it is off).

#include <chrono>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <gtest/gtest.h>

#include "net/log_actor.hpp"
#include "tests/log/log_capture.hpp"

namespace tb {
namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

class test_config : public caf::actor_system_config {
public:
  test_config() {
    tb::add_message_types(*this);
    set("scheduler.policy", caf::atom("testing"));
  }
};

class LogActor : public ::testing::Test {
protected:
  ~LogActor() override {
    if (logger)
      caf::anon_send_exit(logger, caf::exit_reason::user_shutdown);
    sched.run();
  }

  // Spawns the log actor with a summary every `interval` from `counters`.
  void spawn(std::chrono::milliseconds interval) {
    logger = sys.spawn(
        log_actor_impl, interval,
        stats_source{[this](const pb::StatsRequest& req, stats_callback done) {
          ++collections;
          EXPECT_TRUE(req.topic_pattern().empty());
          pb::StatsReply reply;
          *reply.mutable_broker() = counters;
          done(reply, error_info{});
        }});
    sched.run();
  }

  // Advances simulated time by `d` and runs what it triggered.
  void advance(caf::timespan d) {
    sched.advance_time(d);
    sched.run();
  }

  test::log_capture logs;
  test_config cfg;
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  log_actor logger;
  pb::BrokerCounters counters;
  int collections = 0;
};

TEST_F(LogActor, ARefusedCallIsLoggedWithItsClientAndReason) {
  spawn(0ms);
  refusal_reporter report{logger, "Session", "ipv4:10.0.0.1:7"};
  report(make_error_info(ec::limit_exceeded,
                         "the broker serves limits.max_sessions = 1 "
                         "sessions already"));
  report(error_info{}); // no error: nothing to report
  sched.run();
  auto lines = logs.matching("request refused");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("WARN  request refused peer=ipv4:10.0.0.1:7 "
                          "request=Session reason=limit_exceeded error=\"the "
                          "broker serves limits.max_sessions = 1"),
            std::string::npos)
      << lines[0];
}

TEST_F(LogActor, RefusedCallsAreRateLimitedAndTheRestReportedOnTheTimer) {
  spawn(0ms);
  for (int i = 0; i < 8; ++i)
    refusal_reporter{logger, "Publish", "ipv4:10.0.0.1:" + std::to_string(i)}(
        make_error_info(ec::invalid_request, "does not parse"));
  sched.run();
  EXPECT_EQ(logs.matching("request refused").size(), refusal_burst);
  advance(refusal_interval);
  EXPECT_TRUE(logs.contains("3 more refusals suppressed in the last 10 s "
                            "kind=invalid_request suppressed=3"));
}

TEST_F(LogActor, SuppressedRefusalsAreReportedWhenTheActorStops) {
  spawn(0ms);
  for (int i = 0; i < 7; ++i)
    refusal_reporter{logger, "Session", "p"}(
        make_error_info(ec::shutting_down, "the broker is shutting down"));
  sched.run();
  caf::anon_send_exit(logger, caf::exit_reason::user_shutdown);
  sched.run();
  logger = nullptr;
  EXPECT_TRUE(logs.contains("2 more refusals suppressed"));
}

TEST_F(LogActor, TheSummaryNamesGaugesAndCountsSinceTheLastOne) {
  spawn(60s);
  counters.set_sessions(3);
  counters.set_topics(12);
  counters.set_groups(2);
  counters.set_subscriptions(7);
  counters.set_published(1000);
  counters.set_delivered(2500);
  counters.set_dropped(4);
  counters.set_refused(1);
  counters.set_held_bytes(52000);
  advance(60s);
  ASSERT_EQ(collections, 1);
  counters.set_published(1200);
  counters.set_delivered(2600);
  advance(60s);
  auto lines = logs.matching("INFO  summary");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("summary sessions=3 topics=12 groups=2 "
                          "subscriptions=7 published=1000 delivered=2500 "
                          "dropped=4 refused=1 held_bytes=52000 period_ms="),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("published=200 delivered=100 dropped=0 refused=0"),
            std::string::npos)
      << lines[1];
}

TEST_F(LogActor, TheSummaryWakesOncePerIntervalAndNeverWhenOff) {
  spawn(1s);
  for (int i = 0; i < 10; ++i)
    advance(500ms);
  EXPECT_EQ(collections, 5);
  EXPECT_EQ(logs.matching("summary").size(), 5u);
  caf::anon_send_exit(logger, caf::exit_reason::user_shutdown);
  sched.run();
  collections = 0;
  spawn(0ms);
  advance(1h);
  EXPECT_EQ(collections, 0);
  EXPECT_FALSE(sched.has_pending_timeout());
}

TEST_F(LogActor, ACounterThatWentBackwardsCountsAsNothing) {
  pb::BrokerCounters before;
  before.set_published(10);
  pb::BrokerCounters after;
  after.set_published(4);
  log_summary(after, before, 1s);
  EXPECT_TRUE(logs.contains("published=0"));
}

} // namespace
} // namespace tb
