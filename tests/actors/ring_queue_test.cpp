// The sessions' FIFO queue (actors/ring_queue.hpp): order across wrap and
// growth, no storage until the first push, a large ring freed on emptying,
// and elements destroyed exactly once.

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/ring_queue.hpp"

namespace {

using tb::ring_queue;

TEST(RingQueue, HoldsNoStorageUntilTheFirstPush) {
  ring_queue<std::string> q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.capacity(), 0u);
  q.push_back("a");
  EXPECT_EQ(q.capacity(), ring_queue<std::string>::first_capacity);
  EXPECT_EQ(q.front(), "a");
  EXPECT_EQ(q.back(), "a");
}

TEST(RingQueue, KeepsFifoOrderAcrossWrapAndGrowth) {
  ring_queue<int> q;
  int next_in = 0;
  int next_out = 0;
  // Wrap the first ring several times, then grow while wrapped.
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 3; ++i)
      q.push_back(next_in++);
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(q.front(), next_out++);
      q.pop_front();
    }
  }
  EXPECT_EQ(q.size(), 10u);
  std::vector<int> seen(q.begin(), q.end());
  ASSERT_EQ(seen.size(), 10u);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(seen[i], next_out + i);
  while (!q.empty()) {
    EXPECT_EQ(q.front(), next_out++);
    q.pop_front();
  }
  EXPECT_EQ(next_out, next_in);
}

TEST(RingQueue, FreesALargeRingWhenItEmptiesAndKeepsASmallOne) {
  ring_queue<int> q;
  for (int i = 0; i < 8; ++i)
    q.push_back(i);
  auto small = q.capacity();
  while (!q.empty())
    q.pop_front();
  EXPECT_EQ(q.capacity(), small);
  constexpr int many = ring_queue<int>::keep_capacity + 1;
  for (int i = 0; i < many; ++i)
    q.push_back(i);
  EXPECT_GT(q.capacity(), ring_queue<int>::keep_capacity);
  while (!q.empty())
    q.pop_front();
  EXPECT_EQ(q.capacity(), 0u);
}

TEST(RingQueue, EraseFirstKeepsTheOrderOfTheOthers) {
  ring_queue<int> q;
  for (int i : {5, 6, 7, 6, 8})
    q.push_back(i);
  q.pop_front(); // the ring is now offset
  q.push_back(9);
  EXPECT_TRUE(q.erase_first(6));
  EXPECT_FALSE(q.erase_first(42));
  EXPECT_EQ(std::vector<int>(q.begin(), q.end()),
            (std::vector<int>{7, 6, 8, 9}));
}

TEST(RingQueue, DestroysEachElementOnceAndMovesOwnership) {
  auto alive = std::make_shared<int>(0);
  {
    ring_queue<std::shared_ptr<int>> q;
    for (int i = 0; i < 9; ++i) // grows twice
      q.push_back(alive);
    EXPECT_EQ(alive.use_count(), 10);
    q.pop_front();
    EXPECT_EQ(alive.use_count(), 9);
    ring_queue<std::shared_ptr<int>> other{std::move(q)};
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.capacity(), 0u);
    EXPECT_EQ(alive.use_count(), 9);
    q = std::move(other);
    EXPECT_EQ(q.size(), 8u);
    EXPECT_EQ(alive.use_count(), 9);
    ring_queue<std::unique_ptr<int>> owners;
    owners.push_back(std::make_unique<int>(3));
    auto taken = std::move(owners.front());
    owners.pop_front();
    EXPECT_EQ(*taken, 3);
  }
  EXPECT_EQ(alive.use_count(), 1);
}

} // namespace
