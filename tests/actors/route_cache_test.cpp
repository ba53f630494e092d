// Tests of a session's bounded cache of topic routes: LRU order, use marks
// and idle sweeps.

#include "actors/session/route_cache.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tb {
namespace {

/// Returns a route of `topic` at `version`, routing nowhere.
route_ref make_route(const std::string& topic, uint64_t version = 0) {
  auto result = std::make_shared<route>();
  result->topic = topic;
  result->version = version;
  return route_ref{std::move(result)};
}

/// Returns `xs` sorted, for comparing sets of topics.
std::vector<std::string> sorted(std::vector<std::string> xs) {
  std::sort(xs.begin(), xs.end());
  return xs;
}

TEST(RouteCache, FindReturnsTheCachedRouteOrNull) {
  route_cache cache{4};
  EXPECT_EQ(cache.find("a"), nullptr);
  EXPECT_EQ(cache.insert(make_route("a", 3)), std::nullopt);
  auto* found = cache.find("a");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ((*found)->topic, "a");
  EXPECT_EQ((*found)->version, 3u);
  EXPECT_EQ(cache.find("b"), nullptr);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(RouteCache, FullCacheEvictsTheLeastRecentlyInserted) {
  route_cache cache{2};
  EXPECT_EQ(cache.insert(make_route("a")), std::nullopt);
  EXPECT_EQ(cache.insert(make_route("b")), std::nullopt);
  EXPECT_EQ(cache.insert(make_route("c")), "a");
  EXPECT_EQ(cache.insert(make_route("d")), "b");
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.find("a"), nullptr);
  EXPECT_NE(cache.find("c"), nullptr);
  EXPECT_NE(cache.find("d"), nullptr);
}

TEST(RouteCache, FindMarksARouteRecentlyUsed) {
  route_cache cache{2};
  cache.insert(make_route("a"));
  cache.insert(make_route("b"));
  ASSERT_NE(cache.find("a"), nullptr); // now b is the least recently used
  EXPECT_EQ(cache.insert(make_route("c")), "b");
  EXPECT_NE(cache.find("a"), nullptr);
}

TEST(RouteCache, InsertOfACachedTopicReplacesItWithoutEviction) {
  route_cache cache{2};
  cache.insert(make_route("a", 1));
  cache.insert(make_route("b", 1));
  EXPECT_EQ(cache.insert(make_route("a", 2)), std::nullopt);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ((*cache.find("a"))->version, 2u);
  // Re-inserting "a" made it the most recently used: "b" goes first.
  EXPECT_EQ(cache.insert(make_route("c")), "b");
}

TEST(RouteCache, CapacityIsAtLeastOne) {
  route_cache cache{0};
  EXPECT_EQ(cache.insert(make_route("a")), std::nullopt);
  EXPECT_EQ(cache.insert(make_route("b")), "a");
  EXPECT_EQ(cache.size(), 1u);
}

TEST(RouteCache, SweepEvictsOnlyRoutesUnusedSinceThePreviousSweep) {
  route_cache cache{8};
  cache.insert(make_route("a"));
  cache.insert(make_route("b"));
  cache.insert(make_route("c"));
  // Everything was used (inserted) in the first period.
  EXPECT_TRUE(cache.sweep().empty());
  EXPECT_EQ(cache.size(), 3u);
  ASSERT_NE(cache.find("b"), nullptr);
  EXPECT_EQ(sorted(cache.sweep()), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_NE(cache.find("b"), nullptr);
  // Found again in this period: survives the next sweep too.
  EXPECT_TRUE(cache.sweep().empty());
  EXPECT_EQ(cache.sweep(), (std::vector<std::string>{"b"}));
  EXPECT_EQ(cache.size(), 0u);
}

TEST(RouteCache, UpdateDoesNotCountAsUse) {
  route_cache cache{8};
  cache.insert(make_route("a", 1));
  cache.sweep();
  EXPECT_TRUE(cache.update(make_route("a", 2)));
  // Topic actors push updates; only the session's own publishes are use.
  EXPECT_EQ(cache.sweep(), (std::vector<std::string>{"a"}));
}

TEST(RouteCache, UpdateReplacesACachedRoute) {
  route_cache cache{8};
  cache.insert(make_route("a", 1));
  EXPECT_TRUE(cache.update(make_route("a", 2)));
  EXPECT_EQ((*cache.find("a"))->version, 2u);
}

TEST(RouteCache, UpdateOfAnAbsentTopicIsIgnored) {
  route_cache cache{8};
  cache.insert(make_route("a"));
  EXPECT_FALSE(cache.update(make_route("b", 5)));
  EXPECT_EQ(cache.find("b"), nullptr);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(RouteCache, UpdateOfAnEvictedTopicIsIgnored) {
  route_cache cache{1};
  cache.insert(make_route("a"));
  cache.insert(make_route("b"));
  EXPECT_FALSE(cache.update(make_route("a", 2)));
  EXPECT_EQ(cache.find("a"), nullptr);
}

TEST(RouteCache, ClearEvictsEveryRoute) {
  route_cache cache{8};
  cache.insert(make_route("a"));
  cache.insert(make_route("b"));
  EXPECT_EQ(sorted(cache.clear()), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.find("a"), nullptr);
  EXPECT_TRUE(cache.sweep().empty());
}

} // namespace
} // namespace tb
