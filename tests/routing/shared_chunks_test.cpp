// Tests of the chunked, version-sharing list behind a route's fan-out list:
// a change copies only what it changes, and every version reads as the
// plain list it stands for.

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "routing/shared_chunks.hpp"

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

TEST(SharedChunks, ChunksFillSegmentsSoAChangeCopiesOneSegment) {
  auto per_segment = list::chunk_capacity * list::segment_capacity;
  auto n = static_cast<int>(per_segment * 2 + 5);
  auto before = counting(n);
  EXPECT_EQ(before.segment_count(), 3u);
  EXPECT_EQ(before.chunk_count(), 2 * list::segment_capacity + 1);
  auto after = before.with(-1);
  // Every chunk of the two full segments is shared; the last is copied.
  for (std::size_t at = 0; at < per_segment * 2; at += list::chunk_capacity)
    ASSERT_EQ(address_of(before, at), address_of(after, at)) << at;
  EXPECT_NE(address_of(before, per_segment * 2),
            address_of(after, per_segment * 2));
  EXPECT_EQ(after.size(), before.size() + 1);
  EXPECT_EQ(after.to_vector().back(), -1);
  EXPECT_EQ(static_cast<int>(before.to_vector().back()), n - 1);
}

TEST(SharedChunks, WithAllAppendsLikeManyWithsAndSharesTheRest) {
  auto xs = counting(40);
  ints more(1100);
  for (std::size_t i = 0; i < more.size(); ++i)
    more[i] = 1000 + static_cast<int>(i);
  auto all = xs.with_all(more);
  auto one_by_one = xs;
  for (auto x : more)
    one_by_one = one_by_one.with(x);
  EXPECT_EQ(all.to_vector(), one_by_one.to_vector());
  EXPECT_EQ(all.size(), 1140u);
  EXPECT_EQ(all.chunk_count(), one_by_one.chunk_count());
  EXPECT_EQ(all.segment_count(), 2u);
  EXPECT_EQ(address_of(xs, 0), address_of(all, 0)); // the full first chunk
  EXPECT_EQ(xs.size(), 40u);                        // the old version
  EXPECT_EQ(xs.with_all({}).to_vector(), xs.to_vector());
}

TEST(SharedChunks, WithoutAcrossSegmentsKeepsOrderAndDropsEmptySegments) {
  auto per_segment =
      static_cast<int>(list::chunk_capacity * list::segment_capacity);
  auto xs = counting(per_segment * 3);
  std::size_t removed = 0;
  auto middle_gone = xs.without(
      [&](int x) { return x >= per_segment && x < 2 * per_segment; }, removed);
  EXPECT_EQ(removed, static_cast<std::size_t>(per_segment));
  EXPECT_EQ(middle_gone.segment_count(), 2u);
  auto v = middle_gone.to_vector();
  ASSERT_EQ(v.size(), static_cast<std::size_t>(2 * per_segment));
  EXPECT_EQ(v[static_cast<std::size_t>(per_segment - 1)], per_segment - 1);
  EXPECT_EQ(v[static_cast<std::size_t>(per_segment)], 2 * per_segment);
  EXPECT_EQ(address_of(xs, 0), address_of(middle_gone, 0));
  auto grown = middle_gone.with(-1); // appends after a full last segment
  EXPECT_EQ(grown.segment_count(), 3u);
  EXPECT_EQ(grown.to_vector().back(), -1);
}

TEST(SharedChunks, RandomChangesMatchAPlainVector) {
  std::mt19937 gen{42};
  list xs;
  ints model;
  for (int step = 0; step < 5000; ++step) {
    auto dice = gen() % 6;
    if (model.empty() || dice < 3) {
      auto x = static_cast<int>(gen() % 1000);
      xs = xs.with(x);
      model.push_back(x);
    } else if (dice == 3) {
      ints more(gen() % 100);
      for (auto& x : more)
        x = static_cast<int>(gen() % 1000);
      xs = xs.with_all(more);
      model.insert(model.end(), more.begin(), more.end());
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
