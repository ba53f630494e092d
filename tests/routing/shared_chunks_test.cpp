// Tests of the chunked, version-sharing list behind a route's fan-out list:
// a change copies only what it changes, and every version reads as the
// plain list it stands for.

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "actors/routing/shared_chunks.hpp"

namespace {

using list = tb::shared_chunks<int>;
using ints = std::vector<int>;

// Returns the list of 0, 1, ..., n - 1, built one `with` at a time.
list counting(int n) {
  list result;
  for (int i = 0; i < n; ++i)
    result = result.with(i);
  return result;
}

TEST(SharedChunks, EmptyListHasNothing) {
  list empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.begin(), empty.end());
  EXPECT_TRUE(empty.to_vector().empty());
}

TEST(SharedChunks, WithAppendsInOrderAndKeepsTheOldVersion) {
  auto three = counting(3);
  auto four = three.with(3);
  EXPECT_EQ(three.to_vector(), (ints{0, 1, 2}));
  EXPECT_EQ(four.to_vector(), (ints{0, 1, 2, 3}));
  EXPECT_EQ(four.size(), 4u);
}

TEST(SharedChunks, ElementsFillChunksOfTheirCapacity) {
  auto n = static_cast<int>(list::chunk_capacity) * 3 + 1;
  auto xs = counting(n);
  EXPECT_EQ(xs.chunk_count(), 4u);
  EXPECT_EQ(static_cast<int>(xs.size()), n);
  int expected = 0;
  for (auto x : xs)
    EXPECT_EQ(x, expected++);
  EXPECT_EQ(expected, n);
}

// Returns the address of element `index` of `xs`: a chunk two versions share
// is one object, so its elements have one address in both.
const int* address_of(const list& xs, std::size_t index) {
  auto i = xs.begin();
  for (std::size_t k = 0; k < index; ++k)
    ++i;
  return &*i;
}

TEST(SharedChunks, WithSharesEveryChunkButTheLast) {
  auto cap = list::chunk_capacity;
  auto before = counting(static_cast<int>(cap * 4 + 5));
  auto after = before.with(-1);
  for (std::size_t chunk = 0; chunk < 4; ++chunk)
    EXPECT_EQ(address_of(before, chunk * cap), address_of(after, chunk * cap))
        << chunk;
  EXPECT_NE(address_of(before, 4 * cap), address_of(after, 4 * cap));
}

TEST(SharedChunks, WithoutDropsSelectedAndSharesUntouchedChunks) {
  auto cap = list::chunk_capacity;
  auto xs = counting(static_cast<int>(cap * 2));
  std::size_t removed = 0;
  auto three_gone = xs.without([](int x) { return x == 3; }, removed);
  EXPECT_EQ(removed, 1u);
  EXPECT_EQ(three_gone.size(), xs.size() - 1);
  auto v = three_gone.to_vector();
  EXPECT_EQ(std::count(v.begin(), v.end(), 3), 0);
  EXPECT_EQ(xs.size(), cap * 2); // the old version is unchanged
  // The first chunk was copied, the second (which lost nothing) is shared.
  EXPECT_NE(address_of(xs, 0), address_of(three_gone, 0));
  EXPECT_EQ(address_of(xs, cap), address_of(three_gone, cap - 1));
}

TEST(SharedChunks, WithoutEverythingOfAChunkDropsTheChunk) {
  auto n = static_cast<int>(list::chunk_capacity) * 2;
  auto xs = counting(n);
  std::size_t removed = 0;
  auto cap = static_cast<int>(list::chunk_capacity);
  auto rest = xs.without([cap](int x) { return x < cap; }, removed);
  EXPECT_EQ(removed, list::chunk_capacity);
  EXPECT_EQ(rest.chunk_count(), 1u);
  EXPECT_EQ(rest.to_vector().front(), cap);
  auto none = rest.without([](int) { return true; }, removed);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.chunk_count(), 0u);
  EXPECT_EQ(none.begin(), none.end());
}

TEST(SharedChunks, FromVectorReadsBackTheVector) {
  ints xs(100);
  for (int i = 0; i < 100; ++i)
    xs[static_cast<std::size_t>(i)] = i * 7;
  auto built = list::from_vector(xs);
  EXPECT_EQ(built.to_vector(), xs);
  EXPECT_EQ(built.chunk_count(), 4u);
  EXPECT_EQ(built.with(1).to_vector().back(), 1);
}

TEST(SharedChunks, RandomChangesMatchAPlainVector) {
  std::mt19937 gen{42};
  list xs;
  ints model;
  for (int step = 0; step < 5000; ++step) {
    if (model.empty() || gen() % 3 != 0) {
      auto x = static_cast<int>(gen() % 1000);
      xs = xs.with(x);
      model.push_back(x);
    } else {
      auto victim = model[gen() % model.size()];
      std::size_t removed = 0;
      xs = xs.without([victim](int x) { return x == victim; }, removed);
      auto before = model.size();
      model.erase(std::remove(model.begin(), model.end(), victim), model.end());
      ASSERT_EQ(removed, before - model.size());
    }
    ASSERT_EQ(xs.size(), model.size());
  }
  EXPECT_EQ(xs.to_vector(), model);
}

} // namespace
