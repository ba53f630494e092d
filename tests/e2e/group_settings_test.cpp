// End to end: what CreateGroup does with each setting (spec 6, 9): a field
// left zero or empty takes the broker's configured [groups.defaults], a
// value outside its domain is INVALID_ARGUMENT, and a group whose dead
// letters would come back to it is refused, here and in the config file.

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "group_admin_fixture.hpp"

namespace tb::test {
namespace {

constexpr int invalid_argument = 3;

/// The configured defaults, each unlike the built-in one.
constexpr const char* configured_defaults = "[groups.defaults]\n"
                                            "ack_wait = \"7s\"\n"
                                            "max_deliveries = 9\n"
                                            "max_pending_messages = 123\n"
                                            "max_pending_bytes = \"2MiB\"\n"
                                            "overflow = \"drop_oldest\"\n"
                                            "dead_letter = \"graveyard\"\n"
                                            "policy = \"key_hash\"\n";

/// One setting: its name, and whether the settings of a reply hold the
/// configured default for it.
struct setting_case {
  const char* name;
  std::function<bool(const pb::GroupSettings&)> has_default;
};

/// Prints a setting case as its name in test listings.
void PrintTo(const setting_case& x, std::ostream* os) {
  *os << x.name;
}

/// A broker whose [groups.defaults] differ from the built-in defaults.
class GroupDefaultsTest : public GroupAdminTest,
                          public ::testing::WithParamInterface<setting_case> {
protected:
  std::vector<std::string> broker_args() override {
    return {"--config", write_temp_file(configured_defaults, ".toml")};
  }
};

TEST_P(GroupDefaultsTest, CreateGroupLeavingTheSettingUnsetGetsTheDefault) {
  pb::GroupInfo reply;
  auto status = create_group("g", on("g.>"), &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(GetParam().has_default(reply.settings()))
      << GetParam().name << ": " << reply.settings().DebugString();
  auto listed = find_group("g");
  ASSERT_TRUE(listed.has_value());
  EXPECT_TRUE(GetParam().has_default(listed->settings()))
      << GetParam().name << ": " << listed->settings().DebugString();
}

INSTANTIATE_TEST_SUITE_P(
    EverySetting, GroupDefaultsTest,
    ::testing::Values(setting_case{"ack_wait",
                                   [](auto& s) {
                                     return s.ack_wait_ms() == 7000;
                                   }},
                      setting_case{"max_deliveries",
                                   [](auto& s) {
                                     return s.max_deliveries() == 9;
                                   }},
                      setting_case{"max_pending_messages",
                                   [](auto& s) {
                                     return s.max_pending_messages() == 123;
                                   }},
                      setting_case{"max_pending_bytes",
                                   [](auto& s) {
                                     return s.max_pending_bytes() == 2u << 20;
                                   }},
                      setting_case{"overflow",
                                   [](auto& s) {
                                     return s.overflow() ==
                                            pb::OVERFLOW_DROP_OLDEST;
                                   }},
                      setting_case{"dead_letter",
                                   [](auto& s) {
                                     return s.dead_letter() == "graveyard";
                                   }},
                      setting_case{"policy",
                                   [](auto& s) {
                                     return s.policy() == "key_hash";
                                   }}),
    [](const auto& info) { return std::string{info.param.name}; });

TEST_F(GroupAdminTest, UndefinedOverflowValuesAreInvalidArguments) {
  for (int value : {3, 32767, -1}) {
    auto settings = on("o.>");
    settings.set_overflow(static_cast<pb::Overflow>(value));
    auto status = create_group("o", settings);
    EXPECT_EQ(status.error_code(), invalid_argument) << value;
    EXPECT_NE(status.error_message().find("overflow"), std::string::npos)
        << status.error_message();
  }
  EXPECT_FALSE(find_group("o").has_value());
  auto settings = on("o.>");
  settings.set_overflow(pb::OVERFLOW_REJECT);
  pb::GroupInfo reply;
  ASSERT_TRUE(create_group("o", settings, &reply).ok());
  EXPECT_EQ(reply.settings().overflow(), pb::OVERFLOW_REJECT);
}

TEST_F(GroupAdminTest, ADeadLetterTopicTheGroupsPatternMatchesIsRefused) {
  auto settings = on("y.>");
  settings.set_dead_letter("y.dead");
  auto status = create_group("y", settings);
  EXPECT_EQ(status.error_code(), invalid_argument);
  EXPECT_NE(status.error_message().find("\"y.>\""), std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find("\"y.dead\""), std::string::npos)
      << status.error_message();
  EXPECT_FALSE(find_group("y").has_value());
}

TEST_F(GroupAdminTest, ARejectedMessageReachesTheDeadLetterTopicOnce) {
  // The try from the issue, with the loop now impossible: a rejecting
  // worker of "y" gets the message once, and the dead letter lands on a
  // topic outside the pattern.
  auto settings = on("y.>");
  settings.set_dead_letter("dead.y");
  ASSERT_TRUE(create_group("y", settings).ok());
  auto dead = subscriber(7, "dead.>");
  auto member = worker("y", "y.>");
  publish({"y.job"});
  auto got = member->receive(1, patience);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(member->reject({got[0].delivery_id()}));
  auto letters = dead->receive(1, patience);
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0].headers().at("x-tinybroker-original-topic"), "y.job");
  EXPECT_TRUE(member->receive(1, quiet_period).empty());
}

TEST(GroupConfigStartTest, ALoopingGroupInTheConfigStopsTheStartWithExit2) {
  auto path = write_temp_file("[groups.y]\n"
                              "pattern = \"y.>\"\n"
                              "dead_letter = \"y.dead\"\n"
                              "[groups.z]\n"
                              "pattern = \"z..\"\n",
                              ".toml");
  auto [code, out] = run_broker_command({"--config", path});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find(path + ":3:"), std::string::npos) << out;
  EXPECT_NE(out.find("\"y.dead\""), std::string::npos) << out;
  EXPECT_NE(out.find(path + ":5:"), std::string::npos) << out;
  EXPECT_EQ(out.find("listening"), std::string::npos) << out;
  EXPECT_EQ(out.find("stopping"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
