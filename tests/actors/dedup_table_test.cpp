// Tests of the flat table of remembered message ids (issue 28): keys of
// topic and id, growth up to max_ids, eviction oldest first with the index
// kept consistent (backward-shift deletion), expiry by due time.

#include <string>

#include <gtest/gtest.h>

#include "actors/topic/dedup_table.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
using time_point = tb::dedup_table::time_point;

TEST(DedupTable, KeysTellTopicAndIdApart) {
  EXPECT_EQ(tb::make_dedup_key("a.b", "x"), tb::make_dedup_key("a.b", "x"));
  EXPECT_FALSE(tb::make_dedup_key("a.b", "x") ==
               tb::make_dedup_key("a.c", "x"));
  EXPECT_FALSE(tb::make_dedup_key("a", "bc") == tb::make_dedup_key("ab", "c"));
  EXPECT_FALSE(tb::make_dedup_key("t", "12345678") ==
               tb::make_dedup_key("t", "123456789"));
}

TEST(DedupTable, RemembersUpToMaxIdsAndForgetsTheOldestFirst) {
  constexpr int max_ids = 3000; // grows 1024 -> 2048 -> 3000
  tb::dedup_table table{max_ids};
  time_point now{};
  auto key = [](int i) {
    return tb::make_dedup_key("orders", "id-" + std::to_string(i));
  };
  for (int i = 0; i < 2 * max_ids; ++i)
    ASSERT_FALSE(table.check(key(i), i, now, 1min)) << i;
  EXPECT_EQ(table.size(), static_cast<std::size_t>(max_ids));
  EXPECT_EQ(table.evicted(), static_cast<uint64_t>(max_ids));
  // The newest max_ids are all found, with their first ids, after many
  // deletions from the index.
  for (int i = max_ids; i < 2 * max_ids; ++i) {
    auto first = table.check(key(i), 0, now, 1min);
    ASSERT_TRUE(first) << i;
    EXPECT_EQ(*first, static_cast<uint64_t>(i));
  }
  EXPECT_EQ(table.duplicates(), static_cast<uint64_t>(max_ids));
  // 32 bytes per entry and an index at most half full of 8-byte slots,
  // its size a power of two.
  EXPECT_LE(table.memory_bytes(), static_cast<std::size_t>(max_ids) * 64);
}

TEST(DedupTable, KeysWithTheSameSlotTagAreStillTwoKeys) {
  // Same h1 (same home and tag in the index), another h2: the ring's full
  // key decides, and deleting one keeps the other findable.
  tb::dedup_table table{2};
  time_point now{};
  auto a = tb::dedup_key{42, 1};
  auto b = tb::dedup_key{42, 2};
  auto c = tb::dedup_key{42, 3};
  EXPECT_FALSE(table.check(a, 1, now, 1min));
  EXPECT_FALSE(table.check(b, 2, now, 1min));
  EXPECT_EQ(table.check(b, 9, now, 1min), std::optional<uint64_t>{2});
  EXPECT_FALSE(table.check(c, 3, now, 1min)); // a goes
  EXPECT_FALSE(table.check(a, 4, now, 1min)); // b goes
  EXPECT_EQ(table.check(c, 9, now, 1min), std::optional<uint64_t>{3});
  EXPECT_EQ(table.check(a, 9, now, 1min), std::optional<uint64_t>{4});
}

TEST(DedupTable, AnIdPastItsWindowIsNotFoundWhileItWaitsBehindALongerOne) {
  tb::dedup_table table{100};
  time_point start{};
  table.check(tb::make_dedup_key("t", "long"), 1, start, 1h);
  table.check(tb::make_dedup_key("t", "short"), 2, start, 10s);
  EXPECT_EQ(table.expire(start + 10s), start + 1h); // "short" waits
  EXPECT_FALSE(table.check(tb::make_dedup_key("t", "short"), 3, start + 10s,
                           10s)); // but its window ended: new again
  EXPECT_EQ(table.check(tb::make_dedup_key("t", "short"), 4, start + 11s, 10s),
            std::optional<uint64_t>{3});
}

TEST(DedupTable, ExpiresByDueTimeOldestFirst) {
  tb::dedup_table table{100};
  time_point start{};
  table.check(tb::make_dedup_key("t", "a"), 1, start, 10s);
  table.check(tb::make_dedup_key("t", "b"), 2, start + 5s, 10s);
  auto next = table.expire(start + 10s);
  ASSERT_TRUE(next);
  EXPECT_EQ(*next, start + 15s);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_FALSE(table.check(tb::make_dedup_key("t", "a"), 3, start + 10s, 10s));
  EXPECT_TRUE(table.check(tb::make_dedup_key("t", "b"), 4, start + 10s, 10s));
  EXPECT_EQ(table.expired(), 1u);
}

} // namespace
} // namespace tb::test
