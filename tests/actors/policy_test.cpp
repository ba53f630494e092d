// Tests of the built-in group policies as plain objects (no actors): the
// distribution each produces over a member directory, and the registry that
// names them.

#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/policies/key_hash_policy.hpp"
#include "actors/policies/least_loaded_policy.hpp"
#include "actors/policies/policy_registry.hpp"
#include "actors/policies/round_robin_policy.hpp"

namespace tb::test {
namespace {

using keys = std::vector<uint64_t>;

/// A member directory and a policy, with members joined through both.
template <class Policy>
class policy_bench {
public:
  /// Adds a member with `credit` and tells the policy; returns its key.
  uint64_t join(uint32_t credit = 100) {
    group_member member;
    member.max_in_flight = credit;
    auto key = members.add(member);
    policy.joined(key, members.at(key));
    return key;
  }

  /// Marks `key` as gone and tells the policy.
  void leave(uint64_t key) {
    members.at(key).active = false;
    policy.left(key);
  }

  /// Picks a member for `msg` and, if one is picked, counts a delivery.
  uint64_t deliver(const message_ref& msg = message_record::make(0, 0, "t",
                                                                 "")) {
    auto key = policy.pick(*msg, members);
    if (key != 0)
      ++members.at(key).in_flight;
    return key;
  }

  /// Delivers `n` keyless messages and returns who got them, in order.
  keys deliver_n(size_t n) {
    keys result;
    for (size_t i = 0; i < n; ++i)
      result.push_back(deliver());
    return result;
  }

  member_directory members;
  Policy policy;
};

message_ref keyed(const std::string& key) {
  return message_record::make(0, 0, "t", "", key);
}

// -- round_robin
// ----------------------------------------------------------------

TEST(RoundRobinPolicy, RotatesInJoinOrder) {
  policy_bench<round_robin_policy> t;
  auto a = t.join(), b = t.join(), c = t.join();
  EXPECT_EQ(t.deliver_n(7), (keys{a, b, c, a, b, c, a}));
}

TEST(RoundRobinPolicy, SkipsMembersWithoutCreditAndStopsWhenNoneHasAny) {
  policy_bench<round_robin_policy> t;
  auto a = t.join(1), b = t.join(3);
  // Uneven credit: the rotation goes on with whoever still has room.
  EXPECT_EQ(t.deliver_n(5), (keys{a, b, b, b, 0}));
  --t.members.at(a).in_flight; // a acks one
  EXPECT_EQ(t.deliver_n(2), (keys{a, 0}));
}

TEST(RoundRobinPolicy, FairUnderEqualCreditWhenMembersAckAtOnce) {
  policy_bench<round_robin_policy> t;
  auto a = t.join(2), b = t.join(2), c = t.join(2);
  std::map<uint64_t, int> got;
  for (int i = 0; i < 300; ++i) {
    auto key = t.deliver();
    ++got[key];
    --t.members.at(key).in_flight;
  }
  EXPECT_EQ(got[a], 100);
  EXPECT_EQ(got[b], 100);
  EXPECT_EQ(got[c], 100);
}

TEST(RoundRobinPolicy, ALeavingMemberKeepsTheRotationOfTheOthers) {
  policy_bench<round_robin_policy> t;
  auto a = t.join(), b = t.join(), c = t.join();
  EXPECT_EQ(t.deliver_n(2), (keys{a, b}));
  t.leave(b);
  EXPECT_EQ(t.deliver_n(3), (keys{c, a, c}));
  t.leave(a);
  t.leave(c);
  EXPECT_EQ(t.deliver(), 0u);
}

// -- least_loaded
// ----------------------------------------------------------------

TEST(LeastLoadedPolicy, PicksTheMemberWithTheFewestInFlight) {
  policy_bench<least_loaded_policy> t;
  auto a = t.join(), b = t.join(), c = t.join();
  t.members.at(a).in_flight = 5;
  t.members.at(b).in_flight = 2;
  t.members.at(c).in_flight = 4;
  EXPECT_EQ(t.deliver_n(4), (keys{b, b, c, b}));
}

TEST(LeastLoadedPolicy, BreaksTiesInTurnAndSkipsFullMembers) {
  policy_bench<least_loaded_policy> t;
  auto a = t.join(2), b = t.join(2);
  EXPECT_EQ(t.deliver_n(5), (keys{a, b, a, b, 0}));
  --t.members.at(b).in_flight;
  EXPECT_EQ(t.deliver(), b);
}

TEST(LeastLoadedPolicy, ASlowMemberGetsLessWork) {
  policy_bench<least_loaded_policy> t;
  auto fast = t.join(10), slow = t.join(10);
  std::map<uint64_t, int> got;
  for (int i = 0; i < 100; ++i) {
    auto key = t.deliver();
    ++got[key];
    if (key == fast) // the fast member answers at once, the slow never
      --t.members.at(fast).in_flight;
  }
  // Only the first tie goes to the slow member (round robin: 10).
  EXPECT_EQ(got[slow], 1);
  EXPECT_EQ(got[fast], 99);
}

// -- key_hash
// --------------------------------------------------------------------

/// Maps `n` keys to their owners.
std::map<std::string, uint64_t> owners(const key_hash_policy& policy, int n) {
  std::map<std::string, uint64_t> result;
  for (int i = 0; i < n; ++i) {
    auto key = "customer-" + std::to_string(i);
    result[key] = policy.owner(key);
  }
  return result;
}

TEST(KeyHashPolicy, TheSameKeyAlwaysGoesToTheSameMember) {
  policy_bench<key_hash_policy> t;
  t.join(1000), t.join(1000), t.join(1000);
  for (int i = 0; i < 50; ++i) {
    auto key = "k" + std::to_string(i);
    auto first = t.deliver(keyed(key));
    EXPECT_NE(first, 0u);
    for (int j = 0; j < 5; ++j)
      EXPECT_EQ(t.deliver(keyed(key)), first) << key;
  }
}

TEST(KeyHashPolicy, KeysSpreadOverAllMembers) {
  policy_bench<key_hash_policy> t;
  auto members = keys{t.join(), t.join(), t.join(), t.join()};
  std::map<uint64_t, int> share;
  for (auto& [key, owner] : owners(t.policy, 10000))
    ++share[owner];
  for (auto member : members) {
    EXPECT_GT(share[member], 1500) << "member " << member;
    EXPECT_LT(share[member], 3500) << "member " << member;
  }
}

TEST(KeyHashPolicy, AJoiningMemberTakesAboutItsShareAndOnlyFromOthers) {
  policy_bench<key_hash_policy> t;
  for (int i = 0; i < 4; ++i)
    t.join();
  auto before = owners(t.policy, 10000);
  auto fifth = t.join();
  auto after = owners(t.policy, 10000);
  int moved = 0;
  for (auto& [key, owner] : after)
    if (owner != before[key]) {
      ++moved;
      EXPECT_EQ(owner, fifth) << key << " moved between old members";
    }
  // Ideally 1/5 of the keys move.
  EXPECT_GT(moved, 1200);
  EXPECT_LT(moved, 2800);
}

TEST(KeyHashPolicy, ALeavingMemberGivesAwayOnlyItsOwnKeys) {
  policy_bench<key_hash_policy> t;
  auto members = keys{t.join(), t.join(), t.join(), t.join()};
  auto before = owners(t.policy, 10000);
  t.leave(members[1]);
  auto after = owners(t.policy, 10000);
  int moved = 0;
  for (auto& [key, owner] : after) {
    EXPECT_NE(owner, members[1]);
    if (owner != before[key]) {
      ++moved;
      EXPECT_EQ(before[key], members[1]) << key << " moved needlessly";
    }
  }
  EXPECT_GT(moved, 1500);
  EXPECT_LT(moved, 3500);
}

TEST(KeyHashPolicy, AFullOwnerHoldsItsKeysBackWhileOthersGoOn) {
  policy_bench<key_hash_policy> t;
  t.join(1), t.join(1);
  auto owner = t.policy.owner("x");
  EXPECT_EQ(t.deliver(keyed("x")), owner);
  EXPECT_EQ(t.deliver(keyed("x")), 0u);
  // A key of the other member still goes out.
  std::string other;
  for (int i = 0; other.empty(); ++i)
    if (t.policy.owner("y" + std::to_string(i)) != owner)
      other = "y" + std::to_string(i);
  EXPECT_NE(t.deliver(keyed(other)), 0u);
}

TEST(KeyHashPolicy, KeylessMessagesGoRoundRobin) {
  policy_bench<key_hash_policy> t;
  auto a = t.join(), b = t.join();
  EXPECT_EQ(t.deliver_n(4), (keys{a, b, a, b}));
}

TEST(KeyHashPolicy, NoMemberMeansNoPick) {
  policy_bench<key_hash_policy> t;
  EXPECT_EQ(t.deliver(keyed("x")), 0u);
  EXPECT_EQ(t.deliver(), 0u);
}

// -- registry
// ---------------------------------------------------------------------

/// Sends everything to the first member that joined.
class first_member_policy : public group_policy {
public:
  uint64_t pick(const message_record&, const member_directory& m) override {
    return m.join_order().empty() ? 0 : m.join_order().front();
  }
};

TEST(PolicyRegistry, KnowsTheBuiltInPolicies) {
  for (auto name : {"round_robin", "key_hash", "least_loaded"}) {
    EXPECT_TRUE(policy_registry::contains(name)) << name;
    EXPECT_NE(policy_registry::make(name, group_settings{}), nullptr) << name;
  }
  EXPECT_FALSE(policy_registry::contains("no_such_policy"));
  EXPECT_EQ(policy_registry::make("no_such_policy", group_settings{}), nullptr);
}

TEST(PolicyRegistry, RegistersAPolicyInOneLineOnceAndChecksTheName) {
  EXPECT_TRUE(register_policy<first_member_policy>("first_member"));
  EXPECT_FALSE(register_policy<first_member_policy>("first_member"));
  EXPECT_FALSE(register_policy<first_member_policy>("bad name"));
  EXPECT_FALSE(register_policy<first_member_policy>("round_robin"));
  auto policy = policy_registry::make("first_member", group_settings{});
  ASSERT_NE(policy, nullptr);
  member_directory members;
  auto a = members.add(group_member{});
  members.add(group_member{});
  EXPECT_EQ(policy->pick(*message_record::make(0, 0, "t", ""), members), a);
  EXPECT_NE(policy_registry::names_text().find("first_member"),
            std::string::npos);
}

} // namespace
} // namespace tb::test
