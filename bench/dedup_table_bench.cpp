// Benchmarks of the message-id table a topic shard keeps for de-duplication
// (actors/topic/dedup_table.hpp, issue 28): hashing an id, checking new ids
// against a full table (the steady state of a busy topic), filling a table
// from empty (a fresh broker's first ids, with the table growing), and
// finding duplicates. Ids are 15 bytes as the idempotent clients write them
// (8 random bytes and a 7-byte counter); checks go in publish-frame batches
// of 256 with the shard's prefetch distance. Items processed = ids.
//
//   build/bench/dedup_table_bench
//   build/bench/dedup_table_bench --benchmark_repetitions=3

#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "actors/topic/dedup_table.hpp"

namespace {

using namespace std::chrono_literals;

// Ids per publish frame, as tinybroker-bench sends them.
constexpr std::size_t frame = 256;

// How many keys ahead shard_dedup prefetches (topic_shard_dedup.cpp).
constexpr std::size_t ahead = 64;

// Returns `count` ids of 15 bytes: one run's 8 random bytes and a counter.
std::vector<std::string> make_ids(std::size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  uint64_t run = rng();
  std::vector<std::string> ids(count, std::string(15, '\0'));
  for (std::size_t i = 0; i < count; ++i) {
    std::memcpy(ids[i].data(), &run, 8);
    std::memcpy(ids[i].data() + 8, &i, 7);
  }
  return ids;
}

// Returns the keys of `count` fresh ids on one topic, two words per key
// as a shard receives them (`dedup_query::keys`).
std::vector<uint64_t> make_keys(std::size_t count, uint64_t seed) {
  auto topic = tb::make_dedup_topic_hash("bench.s1");
  std::vector<uint64_t> keys;
  keys.reserve(2 * count);
  for (auto& id : make_ids(count, seed)) {
    auto key = tb::make_dedup_key(topic, id);
    keys.push_back(key.h1);
    keys.push_back(key.h2);
  }
  return keys;
}

// Returns key `i` of `keys`, built as the shard builds it.
tb::dedup_key key_at(const std::vector<uint64_t>& keys, std::size_t i) {
  return tb::dedup_key{keys[2 * i], keys[2 * i + 1]};
}

// Checks keys [begin, end) in frames as the shard does; returns duplicates.
std::size_t check_frames(tb::dedup_table& table,
                         const std::vector<uint64_t>& keys, std::size_t begin,
                         std::size_t end, tb::dedup_table::time_point now) {
  std::size_t duplicates = 0;
  for (auto b = begin; b < end; b += frame) {
    auto e = std::min(end, b + frame);
    for (auto i = b; i < std::min(e, b + ahead); ++i)
      table.prefetch(key_at(keys, i));
    for (auto i = b; i < e; ++i) {
      if (i + ahead < e)
        table.prefetch(key_at(keys, i + ahead));
      uint64_t first = 0;
      duplicates += table.seen(key_at(keys, i), i, now, 120s, first);
    }
  }
  return duplicates;
}

// Hashing a 15-byte id on a topic hashed once per frame.
void BM_DedupKey(benchmark::State& state) {
  auto ids = make_ids(1 << 16, 1);
  auto topic = tb::make_dedup_topic_hash("bench.s1");
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tb::make_dedup_key(topic, ids[i]));
    i = (i + 1) & ((1 << 16) - 1);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DedupKey);

// New ids against a table already holding `range(0)` ids: each check
// forgets the oldest (the shard's share of the default max_ids is 250,000).
void BM_CheckNewIdsAtCapacity(benchmark::State& state) {
  auto capacity = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t batch = 1 << 20;
  auto keys = make_keys(capacity + batch, 2);
  tb::dedup_table table(capacity);
  auto now = tb::dedup_table::time_point{} + 1h;
  check_frames(table, keys, 0, capacity, now);
  std::size_t next = capacity;
  for (auto _ : state) {
    if (next + frame > keys.size() / 2) {
      state.PauseTiming();
      keys = make_keys(keys.size() / 2, next); // fresh ids: no duplicates
      next = 0;
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(
        check_frames(table, keys, next, next + frame, now));
    next += frame;
  }
  state.SetItemsProcessed(state.iterations() * frame);
}
BENCHMARK(BM_CheckNewIdsAtCapacity)->Arg(4000)->Arg(250000);

// A fresh table filled with `range(0)` new ids: the index is rebuilt as the
// table grows to its bound.
void BM_FillFromEmpty(benchmark::State& state) {
  auto count = static_cast<std::size_t>(state.range(0));
  auto keys = make_keys(count, 3);
  auto now = tb::dedup_table::time_point{} + 1h;
  for (auto _ : state) {
    tb::dedup_table table(count);
    benchmark::DoNotOptimize(check_frames(table, keys, 0, count, now));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(count));
}
BENCHMARK(BM_FillFromEmpty)->Arg(250000)->Unit(benchmark::kMillisecond);

// Ids already remembered: each check finds its duplicate.
void BM_CheckDuplicates(benchmark::State& state) {
  constexpr std::size_t count = 250000;
  auto keys = make_keys(count, 4);
  tb::dedup_table table(count);
  auto now = tb::dedup_table::time_point{} + 1h;
  check_frames(table, keys, 0, count, now);
  std::size_t next = 0;
  for (auto _ : state) {
    if (next + frame > count)
      next = 0;
    benchmark::DoNotOptimize(
        check_frames(table, keys, next, next + frame, now));
    next += frame;
  }
  state.SetItemsProcessed(state.iterations() * frame);
}
BENCHMARK(BM_CheckDuplicates);

} // namespace
