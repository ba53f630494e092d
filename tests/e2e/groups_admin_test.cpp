// End to end: managing consumer groups (spec 6, 7, 9, 11): pattern
// conflicts, CreateGroup, DeleteGroup, ListGroups, groups declared in the
// config file.

#include <string>
#include <vector>

#include "group_admin_fixture.hpp"

namespace tb::test {
namespace {

constexpr int failed_precondition = 9;

TEST_F(GroupAdminTest, JoiningWithAnotherPatternIsAFailedPrecondition) {
  auto first = worker("work", "jobs.>");
  auto second = conn_->open_session();
  ASSERT_TRUE(second->join(4, "work", "other.>", 0, 31));
  auto frame = second->wait_for(pb::ServerFrame::kError, patience);
  ASSERT_TRUE(frame.has_value()) << "no error frame";
  auto& err = frame->error();
  EXPECT_EQ(err.request_id(), 31u);
  EXPECT_EQ(err.request(), "subscribe");
  EXPECT_EQ(err.subscription_id(), 4u);
  EXPECT_EQ(err.error().code(), failed_precondition);
  EXPECT_EQ(err.error().reason(), "group_pattern_conflict");
  EXPECT_NE(err.error().message().find("jobs.>"), std::string::npos)
      << err.error().message();

  // The stream goes on, and the refused join took nothing from the group.
  subscribe(*second, 5, "other.>");
  publish({"jobs.a"});
  EXPECT_EQ(topics_of(first->receive(1, patience)),
            std::vector<std::string>({"jobs.a"}));
  EXPECT_TRUE(second->receive(1, quiet_period).empty());
}

TEST_F(GroupAdminTest, DeleteGroupEndsMembershipsAndCountsWhatItDropped) {
  ASSERT_TRUE(create_group("doomed", on("doom.>")).ok());
  auto member = worker("doomed", "doom.>", 2);
  publish({"doom.1", "doom.2", "doom.3", "doom.4", "doom.5"});
  ASSERT_EQ(member->receive(2, patience).size(), 2u);

  pb::DeleteGroupReply reply;
  auto status = delete_group("doomed", reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.dropped_messages(), 5u) << "2 in flight and 3 queued";
  auto frame = member->wait_for(pb::ServerFrame::kUnsubscribed, patience);
  ASSERT_TRUE(frame.has_value()) << "the member was not told";
  EXPECT_EQ(frame->unsubscribed().subscription_id(), 1u);
  EXPECT_FALSE(frame->unsubscribed().reason().empty());
  EXPECT_FALSE(find_group("doomed").has_value());

  publish({"doom.6"});
  EXPECT_TRUE(member->receive(1, quiet_period).empty());
}

TEST_F(GroupAdminTest, PurgeGroupDropsPendingAndKeepsWhatIsInFlight) {
  ASSERT_TRUE(create_group("backlog", on("back.>")).ok());
  auto member = worker("backlog", "back.>", 2);
  publish({"back.1", "back.2", "back.3", "back.4", "back.5"});
  auto held = member->receive(2, patience);
  ASSERT_EQ(held.size(), 2u);

  pb::PurgeGroupReply reply;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + patience);
  pb::PurgeGroupRequest req;
  req.set_name("backlog");
  auto status = conn_->stub().PurgeGroup(&ctx, req, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.purged_messages(), 3u) << "3 queued; 2 stay in flight";
  auto info = find_group("backlog");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->counters().pending(), 0u);
  EXPECT_EQ(info->counters().in_flight(), 2u);
  EXPECT_EQ(info->counters().dropped(), 3u);
  // The member is still a member: nothing purged comes back.
  EXPECT_TRUE(member->receive(1, quiet_period).empty());

  grpc::ClientContext unknown;
  unknown.set_deadline(std::chrono::system_clock::now() + patience);
  req.set_name("nobody");
  status = conn_->stub().PurgeGroup(&unknown, req, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("nobody"), std::string::npos)
      << status.error_message();
}

TEST_F(GroupAdminTest, DeletingAnUnknownGroupIsNotFound) {
  pb::DeleteGroupReply reply;
  auto status = delete_group("nobody", reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("nobody"), std::string::npos)
      << status.error_message();
}

TEST_F(GroupAdminTest, CreateGroupRefusesBadNamesAndPatterns) {
  std::vector<std::string> names{"bad name", "dots.not.allowed", "",
                                 std::string(129, 'x')};
  for (auto& name : names)
    EXPECT_EQ(create_group(name, on("ok.>")).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << "name \"" << name << "\"";
  for (auto pattern : {"jobs.>.x", "jobs..x", "", "a b"})
    EXPECT_EQ(create_group("fine", on(pattern)).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << "pattern \"" << pattern << "\"";
  EXPECT_TRUE(list_groups().empty());
}

TEST_F(GroupAdminTest, CreateGroupIsIdempotentButRefusesOtherSettings) {
  ASSERT_TRUE(create_group("twice", on("jobs.>")).ok());
  EXPECT_TRUE(create_group("twice", on("jobs.>")).ok());
  EXPECT_EQ(create_group("twice", on("other.>")).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(list_groups().size(), 1u);
}

TEST_F(GroupAdminTest, DedupWindowIsAGroupSettingBoundedLikeAckWait) {
  auto settings = on("slow.>");
  settings.set_dedup_window_ms(3600000);
  ASSERT_TRUE(create_group("slow", settings).ok());
  ASSERT_TRUE(create_group("plain", on("plain.>")).ok());
  auto too_long = on("long.>");
  too_long.set_dedup_window_ms(8760ull * 3600000 + 1);
  auto refused = create_group("long", too_long);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("settings.dedup_window_ms"),
            std::string::npos)
      << refused.error_message();
  auto groups = list_groups();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].settings().dedup_window_ms(), 0u); // the broker's
  EXPECT_EQ(groups[1].settings().dedup_window_ms(), 3600000u);
}

TEST_F(GroupAdminTest, ListGroupsShowsSettingsAndCounters) {
  auto settings = on("shown.>");
  settings.set_ack_wait_ms(1234);
  settings.set_max_deliveries(3);
  settings.set_max_pending_messages(100);
  settings.set_max_pending_bytes(1 << 20);
  settings.set_overflow(pb::OVERFLOW_DROP_OLDEST);
  settings.set_dead_letter("$dlq.custom");
  ASSERT_TRUE(create_group("shown", settings).ok());
  auto auto_created = worker("auto", "auto.>");
  auto member = worker("shown", "shown.>", 2);
  publish({"shown.1", "shown.2", "shown.3"});
  auto got = member->receive(2, patience);
  ASSERT_EQ(got.size(), 2u);
  ASSERT_TRUE(member->ack({got[0].delivery_id()}));
  // The third is dispatched once the group took the ack.
  ASSERT_EQ(member->receive(1, patience).size(), 1u);

  auto groups = list_groups();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name(), "auto") << "sorted by name";
  auto& defaults = groups[0].settings();
  EXPECT_EQ(defaults.pattern(), "auto.>");
  EXPECT_EQ(defaults.ack_wait_ms(), 30000u);
  EXPECT_EQ(defaults.max_deliveries(), 5u);
  EXPECT_EQ(defaults.overflow(), pb::OVERFLOW_REJECT);
  EXPECT_EQ(defaults.policy(), "round_robin");
  EXPECT_EQ(groups[0].counters().members(), 1u);

  ASSERT_EQ(groups[1].name(), "shown");
  auto& s = groups[1].settings();
  EXPECT_EQ(s.pattern(), "shown.>");
  EXPECT_EQ(s.ack_wait_ms(), 1234u);
  EXPECT_EQ(s.max_deliveries(), 3u);
  EXPECT_FALSE(s.unlimited_deliveries());
  EXPECT_EQ(s.max_pending_messages(), 100u);
  EXPECT_EQ(s.max_pending_bytes(), 1u << 20);
  EXPECT_EQ(s.overflow(), pb::OVERFLOW_DROP_OLDEST);
  EXPECT_EQ(s.dead_letter(), "$dlq.custom");
  EXPECT_EQ(s.policy(), "round_robin");
  auto& c = groups[1].counters();
  EXPECT_EQ(c.received(), 3u);
  EXPECT_EQ(c.delivered(), 3u);
  EXPECT_EQ(c.acked(), 1u);
  EXPECT_EQ(c.in_flight(), 2u);
  EXPECT_EQ(c.pending(), 0u);
  EXPECT_EQ(c.members(), 1u);
  EXPECT_EQ(c.redelivered(), 0u);
  EXPECT_EQ(c.dead_lettered(), 0u);
  EXPECT_EQ(c.dropped(), 0u);
  EXPECT_EQ(c.stale_answers(), 0u);
}

// A broker started with a config file that declares a group.
class ConfiguredGroupTest : public GroupAdminTest {
protected:
  std::vector<std::string> broker_args() override {
    return {"--config", write_temp_file("[groups.orders-workers]\n"
                                        "pattern = \"orders.>\"\n",
                                        ".toml")};
  }
};

TEST_F(ConfiguredGroupTest, DeclaredGroupExistsAtStartAndHoldsMessages) {
  auto declared = find_group("orders-workers");
  ASSERT_TRUE(declared.has_value()) << broker_->output();
  EXPECT_EQ(declared->settings().pattern(), "orders.>");
  EXPECT_EQ(declared->counters().members(), 0u);

  publish({"orders.eu.created", "orders.us.created", "orders.eu.paid"});
  auto member = worker("orders-workers", "orders.>");
  EXPECT_EQ(topics_of(member->receive(3, patience)),
            std::vector<std::string>(
                {"orders.eu.created", "orders.us.created", "orders.eu.paid"}));
}

} // namespace
} // namespace tb::test
