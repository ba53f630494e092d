// Benchmarks of sublist::match, insert and erase, and of topic_tree
// matching; run before changing match() (see the guard comment in
// routing/sublist.cpp).
//
// Build: g++ -std=c++17 -O2 -I. bench/sublist_bench.cpp
//          routing/{topic,sublist,topic_tree}.cpp -lbenchmark
//          -lbenchmark_main

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "routing/sublist.hpp"
#include "routing/topic_tree.hpp"

namespace {

// Returns "<prefix><i>", e.g. "region17".
std::string numbered(const char* prefix, std::size_t i) {
  return prefix + std::to_string(i);
}

// Fills `subs` with `count` three-token subscriptions over 100 regions and
// 100 events; about one in ten uses a wildcard. Deterministic.
void fill(tb::sublist& subs, std::size_t count) {
  std::mt19937 rng{42};
  std::uniform_int_distribution<std::size_t> token{0, 99};
  std::uniform_int_distribution<int> roll{0, 99};
  for (std::size_t key = 0; key < count; ++key) {
    std::string pattern = numbered("svc", token(rng) % 10) + ".";
    auto r = roll(rng);
    if (r < 5)
      pattern += "*." + numbered("event", token(rng));
    else if (r < 8)
      pattern += numbered("region", token(rng)) + ".*";
    else if (r < 10)
      pattern += numbered("region", token(rng)) + ".>";
    else
      pattern +=
          numbered("region", token(rng)) + "." + numbered("event", token(rng));
    subs.insert(pattern, key);
  }
}

// Runs match(topic) in a loop and reports the hits per call.
void run_match(benchmark::State& state, const tb::sublist& subs,
               const std::vector<std::string>& topics) {
  std::vector<uint64_t> out;
  std::size_t hits = 0;
  std::size_t i = 0;
  for (auto _ : state) {
    out.clear();
    subs.match(topics[i], out);
    hits += out.size();
    benchmark::DoNotOptimize(out.data());
    if (++i == topics.size())
      i = 0;
  }
  state.counters["hits"] = benchmark::Counter(
      static_cast<double>(hits), benchmark::Counter::kAvgIterations);
}

// A literal topic with one literal subscription among 1000 others.
void BM_MatchLiteralHit(benchmark::State& state) {
  tb::sublist subs;
  for (std::size_t i = 0; i < 1000; ++i)
    subs.insert("orders." + numbered("region", i) + ".created", i);
  run_match(state, subs, {"orders.region500.created"});
}
BENCHMARK(BM_MatchLiteralHit);

// A topic that every kind of wildcard subscription hits.
void BM_MatchWildcardHits(benchmark::State& state) {
  tb::sublist subs;
  uint64_t key = 0;
  for (auto pattern : {"orders.eu.created", "orders.*.created", "orders.>",
                       "*.eu.*", "*.*.*", ">", "orders.eu.>", "orders.*.*"})
    subs.insert(pattern, key++);
  for (std::size_t i = 0; i < 1000; ++i)
    subs.insert("orders." + numbered("region", i) + ".created", key++);
  run_match(state, subs, {"orders.eu.created"});
}
BENCHMARK(BM_MatchWildcardHits);

// Random topics against 100k subscriptions of mixed shape.
void BM_Match100kSubscriptions(benchmark::State& state) {
  tb::sublist subs;
  fill(subs, 100'000);
  std::mt19937 rng{7};
  std::uniform_int_distribution<std::size_t> token{0, 99};
  std::vector<std::string> topics;
  for (int i = 0; i < 1024; ++i)
    topics.push_back(numbered("svc", token(rng) % 10) + "." +
                     numbered("region", token(rng)) + "." +
                     numbered("event", token(rng)));
  run_match(state, subs, topics);
}
BENCHMARK(BM_Match100kSubscriptions);

// Inserting and erasing one subscription in a sublist of 100k.
void BM_InsertErase(benchmark::State& state) {
  tb::sublist subs;
  fill(subs, 100'000);
  uint64_t key = 1'000'000;
  for (auto _ : state) {
    subs.insert("svc3.region42.fresh", key);
    benchmark::DoNotOptimize(subs.erase("svc3.region42.fresh", key));
    ++key;
  }
}
BENCHMARK(BM_InsertErase);

// Building a sublist of 100k subscriptions from scratch.
void BM_Insert100k(benchmark::State& state) {
  for (auto _ : state) {
    tb::sublist subs;
    fill(subs, 100'000);
    benchmark::DoNotOptimize(subs.size());
  }
}
BENCHMARK(BM_Insert100k)->Unit(benchmark::kMillisecond);

} // namespace

namespace {

// Inserting 100k distinct literal patterns that share their first token
// (one session subscribing to `nomatch.<i>.x`, issue 15.3): per insert.
void BM_InsertDistinctLiterals100k(benchmark::State& state) {
  std::vector<std::string> patterns;
  for (std::size_t i = 0; i < 100'000; ++i)
    patterns.push_back("nomatch." + std::to_string(i) + ".x");
  for (auto _ : state) {
    auto subs = std::make_unique<tb::sublist>();
    for (std::size_t i = 0; i < patterns.size(); ++i)
      subs->insert(patterns[i], i);
    benchmark::DoNotOptimize(subs->size());
    state.PauseTiming(); // freeing is not inserting
    subs.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * 100'000);
}
BENCHMARK(BM_InsertDistinctLiterals100k)->Unit(benchmark::kMillisecond);

// Inserting 20k keys under one pattern, as 20k subscriptions to one topic.
void BM_InsertSamePattern20k(benchmark::State& state) {
  for (auto _ : state) {
    tb::sublist subs;
    for (uint64_t key = 0; key < 20'000; ++key)
      subs.insert("live.topic", key);
    benchmark::DoNotOptimize(subs.size());
  }
  state.SetItemsProcessed(state.iterations() * 20'000);
}
BENCHMARK(BM_InsertSamePattern20k)->Unit(benchmark::kMillisecond);

} // namespace

// -- topic_tree: the existing topics a new pattern reaches --------------------

namespace {

// Finding the 100k topics `x.>` (and `x.*`) reaches among 100k live topics
// `x.<i>`, as the router does for a wildcard subscribe (issue 15.3).
void BM_TopicTreeWildcardOver100k(benchmark::State& state,
                                  const char* pattern) {
  tb::topic_tree tree;
  for (std::size_t i = 0; i < 100'000; ++i)
    tree.insert("x." + std::to_string(i));
  std::size_t found = 0;
  for (auto _ : state)
    tree.for_each_match(pattern, [&](const std::string&) { ++found; });
  state.SetItemsProcessed(static_cast<int64_t>(found));
}
BENCHMARK_CAPTURE(BM_TopicTreeWildcardOver100k, gt, "x.>")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TopicTreeWildcardOver100k, star, "x.*")
    ->Unit(benchmark::kMillisecond);

} // namespace
