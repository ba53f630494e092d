// Tests of the publish path's checks of TTL, delay and priority (issue 29):
// a bad value refuses that message only, naming the problem, and a good one
// reaches the message record.

#include <chrono>
#include <string>

#include "tests/actors/actor_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

int64_t unix_ms_now() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch())
      .count();
}

class PublishTiming : public actor_test {
protected:
  /// Publishes `msgs` with a confirm and returns the confirm's results.
  std::vector<pb::PublishResult> publish_all(const test_session& s,
                                             std::vector<pb::Message> msgs) {
    send_frame(s, publish_frame(21, std::move(msgs)));
    run();
    auto confirms = s.sink->of_kind(kind::kPublishConfirm);
    EXPECT_EQ(confirms.size(), 1u);
    if (confirms.empty())
      return {};
    auto& results = confirms.back().publish_confirm().results();
    return {results.begin(), results.end()};
  }

  /// Checks that `result` refused its message with INVALID_ARGUMENT for
  /// `reason` and a sentence containing `words`.
  static void expect_refused(const pb::PublishResult& result,
                             const std::string& reason,
                             const std::string& words) {
    EXPECT_EQ(result.id(), 0u);
    EXPECT_EQ(result.error().code(), 3);
    EXPECT_EQ(result.error().reason(), reason);
    EXPECT_NE(result.error().message().find(words), std::string::npos)
        << result.error().message();
  }
};

TEST_F(PublishTiming, PriorityAboveNineIsRefusedAlone) {
  auto s = spawn_session();
  auto high = make_message("t.a", "x");
  high.set_priority(10);
  auto nine = make_message("t.a", "y");
  nine.set_priority(9);
  auto results = publish_all(s, {high, nine});
  ASSERT_EQ(results.size(), 2u);
  expect_refused(results[0], "invalid_priority", "priority 10");
  EXPECT_NE(results[1].id(), 0u);
  EXPECT_FALSE(results[1].has_error());
}

TEST_F(PublishTiming, DelayAndNotBeforeTogetherAreRefused) {
  auto s = spawn_session();
  auto both = make_message("t.a", "x");
  both.set_delay_ms(100);
  both.set_not_before_unix_ms(unix_ms_now() + 100);
  auto results = publish_all(s, {both});
  ASSERT_EQ(results.size(), 1u);
  expect_refused(results[0], "invalid_schedule",
                 "both delay_ms and not_before_unix_ms");
}

TEST_F(PublishTiming, DueTimeBeyondMaxDelayIsRefused) {
  auto ctx = context();
  ctx.limits.max_delay = std::chrono::seconds{60};
  auto s = spawn_session(ctx);
  auto late = make_message("t.a", "x");
  late.set_delay_ms(60'001);
  auto far = make_message("t.a", "y");
  far.set_not_before_unix_ms(unix_ms_now() + 3'600'000);
  auto edge = make_message("t.a", "z");
  edge.set_delay_ms(60'000);
  auto past = make_message("t.a", "w");
  past.set_not_before_unix_ms(1); // long past: deliverable at once
  auto results = publish_all(s, {late, far, edge, past});
  ASSERT_EQ(results.size(), 4u);
  expect_refused(results[0], "invalid_schedule", "limits.max_delay");
  expect_refused(results[1], "invalid_schedule", "limits.max_delay");
  EXPECT_FALSE(results[2].has_error());
  EXPECT_FALSE(results[3].has_error());
}

TEST_F(PublishTiming, PriorityReachesTheDelivery) {
  auto s = spawn_session();
  subscribe(s, 1, "t.a");
  auto msg = make_message("t.a", "x");
  msg.set_priority(7);
  msg.set_ttl_ms(60'000);
  auto results = publish_all(s, {msg, make_message("t.a", "plain")});
  ASSERT_EQ(results.size(), 2u);
  auto frames = s.sink->of_kind(kind::kDeliveries);
  std::vector<uint32_t> priorities;
  for (auto& frame : frames)
    for (auto& d : frame.deliveries().deliveries())
      priorities.push_back(d.priority());
  EXPECT_EQ(priorities, (std::vector<uint32_t>{7, 0}));
}

} // namespace
} // namespace tb::test
