// Tests of the flat table of remembered message ids (issue 28): keys of
// topic and id, growth up to max_ids, eviction oldest first (the index's
// slots of forgotten entries are free again), keys beyond a full bucket,
// arrival numbers that come round, expiry by due time, 48 bytes per id.

#include <random>
#include <string>
#include <string_view>

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
  // A topic hashed once (a session's run of messages to one topic) gives
  // the same keys; binary ids are ids like any other.
  auto topic = tb::make_dedup_topic_hash("orders.eu");
  EXPECT_EQ(tb::make_dedup_key(topic, "id-1"),
            tb::make_dedup_key("orders.eu", "id-1"));
  EXPECT_FALSE(tb::make_dedup_key(topic, std::string("\0\xff", 2)) ==
               tb::make_dedup_key(topic, std::string("\0\xfe", 2)));
}

TEST(DedupTable, KeysAreTheSameWhateverTheTailsLength) {
  // The last 1-7 bytes of an id are read with whole loads (no byte copies
  // on the stack): the keys must be those of the byte-wise reading they
  // replaced (values computed with it), for every tail length.
  struct golden {
    const char* id;
    uint64_t h1;
    uint64_t h2;
  };
  const golden keys[] = {
      {"", 0xe6f525cab96f1550ull, 0x511684176678cc35ull},
      {"a", 0x01bb500cf6094c41ull, 0xeeb58fcaabe250beull},
      {"ab", 0x6a05e581e06adc85ull, 0xca61bce45214d0d0ull},
      {"abc", 0x8a3bdfebac6c44b5ull, 0xde02b19a3efbe211ull},
      {"abcd", 0x6d2f8f17490cdf4dull, 0x3dd73f561684cf04ull},
      {"abcdefg", 0x3b68c31cd891db23ull, 0xaa2d0272a07641ecull},
      {"abcdefgh", 0xa0a03883918038b1ull, 0xae0317d2a989f93eull},
      {"abcdefghi", 0x7c99180ed1ccba63ull, 0xa51b134b96933df0ull},
      {"0123456789abcde", 0xfc0d16d3b11a0482ull, 0x758862e9a0164c67ull},
      {"0123456789abcdef0123456", 0xfdfa9cca80edc95aull, 0xcf9300edead85da7ull},
  };
  for (auto& k : keys)
    EXPECT_EQ(tb::make_dedup_key("orders.eu", k.id),
              (tb::dedup_key{k.h1, k.h2}))
        << '"' << k.id << '"';
}

TEST(DedupTable, EveryByteOfAnIdCountsAndNoneBeyondIt) {
  // Ids of 1 to 40 bytes, each inside a larger buffer: changing any one of
  // its bytes changes the key, changing the bytes around it does not.
  std::string buffer(64, 'x');
  for (std::size_t n = 1; n <= 40; ++n) {
    for (std::size_t i = 0; i < n; ++i)
      buffer[8 + i] = static_cast<char>('a' + (i * 7 + n) % 26);
    auto id = std::string_view{buffer}.substr(8, n);
    auto key = tb::make_dedup_key("t", id);
    for (std::size_t i = 0; i < n; ++i) {
      auto kept = buffer[8 + i];
      buffer[8 + i] = static_cast<char>(kept ^ 0x5a);
      EXPECT_FALSE(tb::make_dedup_key("t", id) == key) << n << " " << i;
      buffer[8 + i] = kept;
    }
    buffer[7] = '<';
    buffer[8 + n] = '>';
    EXPECT_EQ(tb::make_dedup_key("t", id), key) << n;
    buffer[7] = 'x';
    buffer[8 + n] = 'x';
  }
}

TEST(DedupTable, SeenGivesTheFirstIdOfADuplicate) {
  // `seen` is `check` without the optional: false and remembered for a new
  // id, true and the first message's id for a duplicate.
  tb::dedup_table table{16};
  time_point now{};
  uint64_t first = 0;
  EXPECT_FALSE(table.seen(tb::make_dedup_key("t", "a"), 7, now, 1min, first));
  EXPECT_EQ(first, 0u);
  EXPECT_TRUE(table.seen(tb::make_dedup_key("t", "a"), 9, now, 1min, first));
  EXPECT_EQ(first, 7u);
  EXPECT_EQ(table.duplicates(), 1u);
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
  // 32 bytes per entry and a 64-byte bucket per 4 entries.
  EXPECT_EQ(table.memory_bytes(), static_cast<std::size_t>(max_ids) * 48);
}

TEST(DedupTable, KeysWithTheSameSlotTagAreStillTwoKeys) {
  // Same h1 (same tag in the index), another h2: the ring's full key
  // decides, and forgetting one keeps the other findable.
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

TEST(DedupTable, KeysBeyondAFullBucketAreFoundWhileRemembered) {
  // 20 keys with one home bucket (same low bits of h2), 7 slots each: they
  // fill it and two more. Forgetting the oldest frees their slots for new
  // keys; the newer ones beyond stay findable.
  tb::dedup_table table{1024};
  time_point start{};
  auto key = [](uint64_t i) {
    return tb::dedup_key{(i + 1) << 32, 5};
  };
  for (uint64_t i = 0; i < 10; ++i)
    ASSERT_FALSE(table.check(key(i), i, start, 10s));
  for (uint64_t i = 10; i < 20; ++i)
    ASSERT_FALSE(table.check(key(i), i, start, 20s));
  auto bytes = table.memory_bytes();
  for (uint64_t i = 0; i < 20; ++i)
    EXPECT_EQ(table.check(key(i), 99, start, 10s), std::optional<uint64_t>{i});
  EXPECT_EQ(table.expire(start + 10s), start + 20s); // 0-9 forgotten
  for (uint64_t i = 10; i < 20; ++i)
    EXPECT_EQ(table.check(key(i), 99, start, 10s), std::optional<uint64_t>{i});
  for (uint64_t i = 20; i < 30; ++i)
    ASSERT_FALSE(table.check(key(i), i, start + 10s, 10s));
  for (uint64_t i = 10; i < 30; ++i)
    EXPECT_EQ(table.check(key(i), 99, start + 10s, 10s),
              std::optional<uint64_t>{i});
  EXPECT_FALSE(table.check(key(3), 33, start + 10s, 10s)); // new again
  EXPECT_EQ(table.memory_bytes(), bytes);
}

TEST(DedupTable, ArrivalNumbersComingRoundFindNothingForgotten) {
  // 4 ids in one bucket, arrival numbers modulo 16: 100,000 new ids wrap
  // them 6,000 times. A forgotten id's slot must never look remembered
  // again (the bucket would fill up for good), nor a remembered one be
  // missed.
  tb::dedup_table table{4, 16};
  time_point now{};
  auto key = [](uint64_t i) {
    return tb::dedup_key{(i % 1000 + 1) << 32 | i, i % 3};
  };
  for (uint64_t i = 0; i < 100000; ++i) {
    ASSERT_FALSE(table.check(key(i), i, now, 1min)) << i;
    for (uint64_t j = i >= 3 ? i - 3 : 0; j <= i; ++j)
      ASSERT_EQ(table.check(key(j), 0, now, 1min), std::optional<uint64_t>{j})
          << i << " " << j;
  }
  EXPECT_EQ(table.size(), 4u);
  EXPECT_EQ(table.evicted(), 100000u - 4);
}

TEST(DedupTable, RemembersAnIdIn48Bytes) {
  // A shard's share of the default [dedup] max_ids (1,000,000 over 4
  // shards), full: a 32-byte ring entry and a quarter of a 64-byte bucket
  // per id, nothing allocated per id.
  constexpr std::size_t max_ids = 250000;
  tb::dedup_table table{max_ids};
  time_point now{};
  for (std::size_t i = 0; i < max_ids + 1000; ++i)
    table.check(tb::make_dedup_key("bench.t", std::to_string(i)), i, now, 1min);
  ASSERT_EQ(table.size(), max_ids);
  EXPECT_EQ(table.memory_bytes(), max_ids * 48);
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

// The bucket scan that `seen` uses (SSE2 on x86-64) tells the same lanes
// remembered and tagged as the one-lane-at-a-time rule, for random lanes
// around the ring's bounds, with and without the wrap of the seqs.
TEST(DedupTable, TheBucketScanAgreesWithTheScalarRule) {
  std::mt19937_64 random(28);
  alignas(64) uint64_t lanes[8];
  for (int round = 0; round < 20000; ++round) {
    tb::detail::seq_window seqs;
    seqs.period = round % 2 == 0 ? 4096u : 4294967040u;
    // The head anywhere, near 0 (the ring's seqs wrap past the period),
    // near 2^31 (where signed and unsigned compares part) or near the
    // period's end.
    switch (round % 8 / 2) {
    case 0:
      seqs.head = static_cast<uint32_t>(random() % seqs.period);
      break;
    case 1:
      seqs.head = static_cast<uint32_t>(random() % 64);
      break;
    case 2:
      seqs.head =
          static_cast<uint32_t>((uint64_t{1} << 31) + random() % 128 - 64) %
          seqs.period;
      break;
    default:
      seqs.head = seqs.period - 1 - static_cast<uint32_t>(random() % 1100);
    }
    seqs.size = static_cast<uint32_t>(random() % 1025);
    uint32_t tag = static_cast<uint32_t>(random() % 4);
    for (auto& lane : lanes) {
      // seq + 1 near the head or the end of the ring, or unused (0); a tag
      // of 0 to 3.
      auto near = random() % 2 == 0 ? seqs.head : seqs.head + seqs.size;
      auto seq = static_cast<uint32_t>(
          (near + random() % 64 - 32 + seqs.period) % seqs.period);
      uint64_t value = random() % 8 == 0 ? 0 : uint64_t{seq} + 1;
      lane = (static_cast<uint64_t>(random() % 4) << 32) | value;
    }
    auto fast = tb::detail::scan_bucket(lanes, tag, seqs);
    auto reference = tb::detail::scan_bucket_scalar(lanes, tag, seqs);
    ASSERT_EQ(fast.live, reference.live) << "round " << round;
    ASSERT_EQ(fast.tagged, reference.tagged) << "round " << round;
  }
}

TEST(NumberedMsgIds, TheLastEightBytesCountFromTheBaseWithCarry) {
  using namespace std::string_literals;
  // An idempotent client's base: 8 bytes of the client, then 7 of number.
  auto base = "client-A\0\0\0\0\0\0\xfe"s;
  tb::numbered_msg_ids ids{base};
  EXPECT_EQ(ids.at(0), base);
  EXPECT_EQ(ids.at(1), "client-A\0\0\0\0\0\0\xff"s);
  EXPECT_EQ(ids.at(2), "client-A\0\0\0\0\0\x01\0"s); // carried
  EXPECT_EQ(ids.at(0x101), "client-A\0\0\0\0\0\x01\xff"s);
  // A base of at most 8 bytes is all number, and wraps within its length.
  tb::numbered_msg_ids short_ids{"\x01\xff\xff"s};
  EXPECT_EQ(short_ids.at(1), "\x02\0\0"s);
  tb::numbered_msg_ids wraps{"\xff"s};
  EXPECT_EQ(wraps.at(1), "\0"s);
  // Only the last 8 bytes of a longer base change.
  auto long_base = std::string(20, 'x') + std::string(8, '\xff');
  tb::numbered_msg_ids long_ids{long_base};
  EXPECT_EQ(long_ids.at(1), std::string(20, 'x') + std::string(8, '\0'));
}
