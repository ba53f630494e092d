// Tests of the broker-wide and per-session limits enforced by actors
// (spec 7, docs/configuration.md): live topics, groups, subscriptions per
// session and the in-flight budget per session. Reaching a limit refuses the
// one request with RESOURCE_EXHAUSTED (`limit_exceeded`) and nothing else.

#include <string>
#include <vector>

#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;
using kind = pb::ServerFrame::KindCase;

constexpr int resource_exhausted = 8;

/// A router with small limits: 2 topics, 1 group.
class Limits : public group_test {
protected:
  Limits()
      : group_test([](tb::router_settings& settings) {
          settings.session_context.limits.max_topics = 2;
          settings.session_context.limits.max_groups = 1;
        }) {
    // nop
  }

  /// Returns a session whose limits are `limits`.
  test_session spawn_limited(const tb::limits_config& limits) {
    auto ctx = context();
    ctx.limits = limits;
    return spawn_session(ctx);
  }

  /// Returns the error frames `session` got.
  static std::vector<pb::ErrorFrame> errors(const test_session& session) {
    std::vector<pb::ErrorFrame> result;
    for (auto& frame : session.sink->of_kind(kind::kError))
      result.push_back(frame.error());
    return result;
  }
};

TEST_F(Limits, APublishToOneTopicBeyondMaxTopicsIsRefusedAlone) {
  auto pub = spawn_session();
  auto sub = spawn_session();
  subscribe(sub, 1, ">");
  // Within one batch, the shards decide in their own order which new topic
  // is one too many; across batches, the later one is refused.
  send_frame(pub, publish_frame(next_request_id(), {make_message("t.1", "a"),
                                                    make_message("t.2", "b")}));
  send_frame(pub, publish_frame(next_request_id(), {make_message("t.3", "c"),
                                                    make_message("t.1", "d")}));
  run();
  auto confirms = pub.sink->of_kind(kind::kPublishConfirm);
  ASSERT_EQ(confirms.size(), 2u);
  for (auto& result : confirms[0].publish_confirm().results())
    EXPECT_FALSE(result.has_error());
  auto& results = confirms[1].publish_confirm().results();
  ASSERT_EQ(results.size(), 2);
  EXPECT_EQ(results[0].error().code(), resource_exhausted);
  EXPECT_EQ(results[0].error().reason(), "limit_exceeded");
  EXPECT_NE(results[0].error().message().find("limits.max_topics"),
            std::string::npos);
  EXPECT_FALSE(results[1].has_error());
  EXPECT_EQ(payloads_of(sub.sink->deliveries()),
            (std::vector<std::string>{"a", "b", "d"}));
  EXPECT_EQ(live_topics(), 2u);
}

TEST_F(Limits, CreatingOrAutoCreatingAGroupBeyondMaxGroupsIsRefused) {
  create_group("first", group_settings("a.>"));
  auto response = self->request(router, caf::infinite, tb::create_atom_v,
                                std::string{"second"}, group_settings("b.>"));
  run();
  response.receive(
      [](tb::group_info&) { ADD_FAILURE() << "created beyond max_groups"; },
      [this](caf::error& err) {
        EXPECT_EQ(to_error_info(err).code, tb::ec::limit_exceeded);
        EXPECT_NE(sys.render(err).find("max_groups = 1"), std::string::npos);
      });
  auto member = spawn_session();
  send_frame(member, join_frame(41, 1, "c.>", "third"));
  run();
  auto refused = errors(member);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].error().code(), resource_exhausted);
  join(member, 2, "first", "a.>"); // the existing group still takes members
  EXPECT_EQ(counters("first").members, 1u);
  EXPECT_FALSE(group("second"));
  EXPECT_FALSE(group("third"));
}

TEST_F(Limits, SubscriptionsPerSessionAreBounded) {
  tb::limits_config limits;
  limits.max_subscriptions_per_session = 2;
  auto session = spawn_limited(limits);
  subscribe(session, 1, "a");
  subscribe(session, 2, "b");
  subscribe(session, 3, "c");
  auto refused = errors(session);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].subscription_id(), 3u);
  EXPECT_EQ(refused[0].error().code(), resource_exhausted);
  EXPECT_EQ(session.sink->of_kind(kind::kSubscribed).size(), 2u);
}

TEST_F(Limits, MembershipsShareOneInFlightBudgetPerSession) {
  create_group("first", group_settings("a.>"));
  tb::limits_config limits;
  limits.max_in_flight_per_session = 300;
  auto worker = spawn_limited(limits);
  auto pub = spawn_session();
  join(worker, 1, "first", "a.>", 200);
  publish(pub, "a.x", 500);
  EXPECT_EQ(worker.sink->deliveries().size(), 200u);
  // A second membership (of the same group: this router holds one group
  // at most) asks for 200 and gets the 100 left of the session's budget.
  join(worker, 2, "first", "a.>", 200);
  EXPECT_EQ(worker.sink->deliveries().size(), 300u);
  send_frame(worker, join_frame(42, 3, "a.>", "first", 1));
  run();
  auto refused = errors(worker);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].subscription_id(), 3u);
  EXPECT_EQ(refused[0].error().code(), resource_exhausted);
  EXPECT_NE(refused[0].error().message().find("max_in_flight_per_session"),
            std::string::npos);
  EXPECT_EQ(worker.sink->deliveries().size(), 300u);
}

} // namespace
} // namespace tb::test
