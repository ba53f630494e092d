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
  // 32 bytes per entry and an index at most half full of 4-byte slots.
  EXPECT_LE(table.memory_bytes(), static_cast<std::size_t>(max_ids) * 48);
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
