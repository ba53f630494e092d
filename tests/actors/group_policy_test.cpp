// Tests of group policies inside real group actors, in simulated time: the
// policy named in the settings picks the member, holding messages back when
// it waits for a particular member, members' tags reach it, and unknown
// policies or bad tags are refused.

#include <string>
#include <vector>

#include "actors/policies/key_hash_policy.hpp"
#include "actors/policies/policy_registry.hpp"
#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using strings = std::vector<std::string>;
using kind = pb::ServerFrame::KindCase;

/// Sends every message to a member tagged "chosen", if one has credit.
class chosen_policy : public group_policy {
public:
  uint64_t pick(const message_record&, const member_directory& m) override {
    for (auto key : m.join_order())
      if (m.at(key).has_credit() && m.at(key).has_tag("chosen"))
        return key;
    return 0;
  }
};

/// A publisher and two would-be members of a group "work" on "jobs.>".
class GroupPolicy : public group_test {
protected:
  /// Creates "work" with the policy `name`.
  void create_work(const std::string& name) {
    auto settings = group_settings("jobs.>");
    settings.policy = name;
    create_group("work", settings);
  }

  /// Publishes one message per (key, payload) pair to "jobs.x", in order.
  void
  publish_keyed(const std::vector<std::pair<std::string, std::string>>& msgs) {
    std::vector<pb::Message> batch;
    for (auto& [key, payload] : msgs)
      batch.push_back(make_message("jobs.x", payload, key));
    send_frame(pub, publish_frame(next_request_id(), std::move(batch)));
    run();
  }

  test_session pub = spawn_session();
  test_session a = spawn_session();
  test_session b = spawn_session();
};

TEST_F(GroupPolicy, KeyHashSendsEachKeyToOneMemberInOrder) {
  create_work("key_hash");
  join(a, 1, "work", "jobs.>");
  join(b, 1, "work", "jobs.>");
  std::vector<std::pair<std::string, std::string>> msgs;
  for (int round = 0; round < 3; ++round)
    for (int k = 0; k < 10; ++k)
      msgs.emplace_back("k" + std::to_string(k),
                        "k" + std::to_string(k) + "#" + std::to_string(round));
  publish_keyed(msgs);
  auto got_a = payloads_of(a.sink->deliveries());
  auto got_b = payloads_of(b.sink->deliveries());
  EXPECT_EQ(got_a.size() + got_b.size(), 30u);
  EXPECT_FALSE(got_a.empty());
  EXPECT_FALSE(got_b.empty());
  for (int k = 0; k < 10; ++k) {
    auto prefix = "k" + std::to_string(k) + "#";
    for (auto* got : {&got_a, &got_b}) {
      strings mine;
      for (auto& payload : *got)
        if (payload.rfind(prefix, 0) == 0)
          mine.push_back(payload);
      EXPECT_TRUE(mine.empty() ||
                  mine == (strings{prefix + "0", prefix + "1", prefix + "2"}))
          << "key k" << k << " split or out of order";
    }
  }
}

TEST_F(GroupPolicy, KeyHashHoldsAFullMembersKeysBackWhileOthersGoOn) {
  create_work("key_hash");
  join(a, 1, "work", "jobs.>", 1);
  join(b, 1, "work", "jobs.>", 10);
  // The group gives a and b the keys 1 and 2: a mirror policy tells which
  // routing keys each owns.
  key_hash_policy mirror;
  mirror.joined(1, group_member{});
  mirror.joined(2, group_member{});
  std::string of_a, of_b;
  for (int i = 0; of_a.empty() || of_b.empty(); ++i) {
    auto key = "c" + std::to_string(i);
    (mirror.owner(key) == 1 ? of_a : of_b) = key;
  }
  publish_keyed({{of_a, "a1"}, {of_a, "a2"}, {of_b, "b1"}, {of_b, "b2"}});
  EXPECT_EQ(payloads_of(a.sink->deliveries()), (strings{"a1"}));
  EXPECT_EQ(payloads_of(b.sink->deliveries()), (strings{"b1", "b2"}));
  EXPECT_EQ(counters("work").pending, 1u);
  ack(a, ids_of(a.sink->deliveries()));
  EXPECT_EQ(payloads_of(a.sink->deliveries()), (strings{"a1", "a2"}));
  EXPECT_EQ(counters("work").pending, 0u);
}

TEST_F(GroupPolicy, LeastLoadedFavoursTheMemberThatAcked) {
  create_work("least_loaded");
  join(a, 1, "work", "jobs.>");
  join(b, 1, "work", "jobs.>");
  publish(pub, "jobs.x", 4, "m");
  EXPECT_EQ(payloads_of(a.sink->deliveries()), (strings{"m0", "m2"}));
  EXPECT_EQ(payloads_of(b.sink->deliveries()), (strings{"m1", "m3"}));
  ack(a, ids_of(a.sink->deliveries()));
  publish(pub, "jobs.x", 2, "n");
  EXPECT_EQ(payloads_of(a.sink->deliveries()),
            (strings{"m0", "m2", "n0", "n1"}));
  EXPECT_EQ(b.sink->deliveries().size(), 2u);
}

TEST_F(GroupPolicy, NoMemberWithCreditHoldsEverything) {
  create_work("least_loaded");
  join(a, 1, "work", "jobs.>", 1);
  publish(pub, "jobs.x", 3);
  EXPECT_EQ(a.sink->deliveries().size(), 1u);
  EXPECT_EQ(counters("work").pending, 2u);
  ack(a, ids_of(a.sink->deliveries()));
  EXPECT_EQ(a.sink->deliveries().size(), 2u);
}

TEST_F(GroupPolicy, MembersTagsReachAUserPolicy) {
  ASSERT_TRUE(policy_registry::contains("chosen") ||
              register_policy<chosen_policy>("chosen"));
  create_work("chosen");
  join(a, 1, "work", "jobs.>", 0, {"plain"});
  join(b, 1, "work", "jobs.>", 0, {"x", "chosen"});
  publish(pub, "jobs.x", 3);
  EXPECT_TRUE(a.sink->deliveries().empty());
  EXPECT_EQ(payloads_of(b.sink->deliveries()), (strings{"m0", "m1", "m2"}));
}

TEST_F(GroupPolicy, BadTagsAreRefusedWithAnErrorFrame) {
  create_work("round_robin");
  send_frame(a, join_frame(41, 1, "jobs.>", "work", 0, {"has space"}));
  run();
  auto errors = a.sink->of_kind(kind::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].error().request_id(), 41u);
  EXPECT_EQ(errors[0].error().error().reason(), "invalid_request");
  EXPECT_NE(errors[0].error().error().message().find("has space"),
            std::string::npos);
  EXPECT_EQ(counters("work").members, 0u);
  join(a, 1, "work", "jobs.>", 0, {"ok"}); // the id is free again
  EXPECT_EQ(counters("work").members, 1u);
}

TEST_F(GroupPolicy, AnUnknownPolicyIsRefusedNamingTheKnownOnes) {
  auto settings = group_settings("jobs.>");
  settings.policy = "no_such_policy";
  auto response = self->request(router, caf::infinite, tb::create_atom_v,
                                std::string{"work"}, settings);
  run();
  ASSERT_FALSE(self->mailbox().empty());
  response.receive(
      [](tb::group_info&) { ADD_FAILURE() << "created with a bad policy"; },
      [this](caf::error& err) {
        auto text = sys.render(err);
        EXPECT_NE(text.find("no_such_policy"), std::string::npos) << text;
        EXPECT_NE(text.find("key_hash"), std::string::npos) << text;
      });
  EXPECT_FALSE(group("work"));
}

} // namespace
} // namespace tb::test
