// Tests of a group that starts from a promoted replica's state (issue 32,
// `group_context::seed`): what was in flight is delivered again first, its
// attempt counted; the rest keeps its order, priorities, due times and
// TTLs; new messages take keys after the seed's.

#include <string>
#include <vector>

#include "tests/actors/replica_fixture.hpp"

namespace tb::test {
namespace {

using strings = std::vector<std::string>;

class GroupSeed : public replica_test {
protected:
  /// Creates "work" from `seed`, as the router does after a failover.
  void create_from(tb::group_seed seed) {
    auto& ctx = deref<tb::router_state>(router).group_ctx;
    ctx.seed = std::make_shared<const tb::group_seed>(std::move(seed));
    create_work();
    ctx.seed = nullptr;
  }

  /// Returns a seed item.
  tb::replica_item item(uint64_t key, const std::string& payload,
                        uint32_t attempts = 0, bool in_flight = false,
                        tb::message_timing timing = {}) {
    return tb::replica_item{key, make(payload, timing), attempts, in_flight};
  }

  /// Returns the attempt of each delivery `s` received, in order.
  static std::vector<uint32_t> attempts_of(const test_session& s) {
    std::vector<uint32_t> result;
    for (auto& d : s.sink->deliveries())
      result.push_back(d.attempt());
    return result;
  }

  test_session pub = spawn_session();
  test_session a = spawn_session();
};

TEST_F(GroupSeed, InFlightMessagesGoFirstWithTheirAttemptCounted) {
  tb::group_seed seed;
  seed.items = {item(1, "p1"), item(2, "p2"), item(3, "f3", 1, true),
                item(5, "f5", 2, true), item(7, "p7", 1)};
  seed.next_key = 9;
  create_from(std::move(seed));
  auto before = counters("work");
  EXPECT_EQ(before.pending, 5u);
  EXPECT_EQ(before.received, 5u);
  join(a, 1, "work", "jobs.>", 10);
  EXPECT_EQ(payloads_of(a.sink->deliveries()),
            (strings{"f3", "f5", "p1", "p2", "p7"}));
  EXPECT_EQ(attempts_of(a), (std::vector<uint32_t>{2, 3, 1, 1, 2}));
  EXPECT_EQ(counters("work").redelivered, 3u);
  // New messages continue the seed's keys.
  publish(pub, "jobs.a", 2);
  std::vector<uint64_t> keys;
  for (auto& [key, attempts, in_flight] : owner_book())
    keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<uint64_t>{1, 2, 3, 5, 7, 9, 10}));
}

TEST_F(GroupSeed, PrioritiesDueTimesAndTtlsHoldAsInTheOldOwner) {
  tb::group_seed seed;
  seed.items = {
      item(1, "low"),
      item(2, "urgent", 0, false, tb::message_timing{0, 0, 5}),
      item(3, "later", 0, false, tb::message_timing{0, 500, 0}),
      item(4, "short", 0, false, tb::message_timing{100, 0, 0}),
  };
  seed.next_key = 5;
  create_from(std::move(seed));
  EXPECT_EQ(counters("work").scheduled, 1u);
  pass(200ms); // "short" expires before anyone takes it
  join(a, 1, "work", "jobs.>", 10);
  EXPECT_EQ(payloads_of(a.sink->deliveries()), (strings{"urgent", "low"}));
  EXPECT_EQ(counters("work").expired_ttl, 1u);
  pass(400ms);
  EXPECT_EQ(payloads_of(a.sink->deliveries()),
            (strings{"urgent", "low", "later"}));
}

TEST_F(GroupSeed, ASeededGroupStreamsItsStateToItsNewReplica) {
  tb::group_seed seed;
  seed.items = {item(4, "a", 1, true), item(6, "b")};
  seed.next_key = 7;
  create_from(std::move(seed));
  auto r = spawn_replica();
  attach(r, 1);
  EXPECT_EQ(replica_book(r), owner_book());
  publish(pub, "jobs.a", 1);
  EXPECT_EQ(replica_book(r), owner_book());
  EXPECT_EQ(deref<tb::replica_state>(r).next_key, 8u);
}

} // namespace
} // namespace tb::test
