// Benchmarks of a group's scheduled messages (issue 29,
// actors/group/group_schedule.hpp via group_ledger): schedule n messages
// with due times in a scattered order, then fire them all in the slices the
// group actor takes per wake-up (`schedule_slice`). Reports per message the
// time to schedule and to fire (n log n shows as slowly growing ns/msg),
// the heap bytes per scheduled message beyond the message itself, and the
// longest slice (the group's longest stall for this work).
//
//   build/bench/group_schedule_bench
//   build/bench/group_schedule_bench --benchmark_filter=ScheduleThenFire

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "actors/group/group_ledger.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = tb::group_ledger::time_point;
using wall = std::chrono::steady_clock;

// Messages released per wake-up, as the group actor does (schedule_slice
// in actors/group/group_actor.hpp).
constexpr std::size_t slice = 1024;

// Schedules range(0) messages due over 1000 s in a scattered order, then
// fires them all slice by slice.
void BM_ScheduleThenFire(benchmark::State& state) {
  auto n = static_cast<std::size_t>(state.range(0));
  std::vector<tb::message_ref> messages;
  messages.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    messages.push_back(tb::message_record::make(
        i + 1, 0, "jobs.eu.created", std::string(16, 'x'), "",
        tb::header_list{}, tb::message_timing{0, 1000, 0}));
  double schedule_ns = 0, fire_ns = 0, max_slice_ms = 0, heap_bytes = 0;
  auto start = clock_type{} + 1h;
  for (auto _ : state) {
    tb::group_ledger ledger;
    auto t0 = wall::now();
    for (std::size_t i = 0; i < n; ++i) {
      // A permutation of due times over 1000 s (7919 is prime).
      auto offset =
          std::chrono::microseconds{static_cast<int64_t>((i * 7919) % n) *
                                    1'000'000'000 / static_cast<int64_t>(n)};
      ledger.schedule(messages[i], start + offset);
    }
    auto t1 = wall::now();
    heap_bytes = static_cast<double>(ledger.schedule_allocated_bytes()) /
                 static_cast<double>(n);
    auto end = start + 1001s;
    std::size_t fired = 0;
    while (fired < n) {
      auto s0 = wall::now();
      auto moved = ledger.release_scheduled(end, slice);
      while (ledger.has_ready())
        benchmark::DoNotOptimize(ledger.pop_front());
      auto s1 = wall::now();
      max_slice_ms =
          std::max(max_slice_ms,
                   std::chrono::duration<double, std::milli>(s1 - s0).count());
      fired += moved;
    }
    auto t2 = wall::now();
    schedule_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    fire_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
  }
  auto per = static_cast<double>(state.iterations()) * static_cast<double>(n);
  state.counters["schedule_ns_per_msg"] = schedule_ns / per;
  state.counters["fire_ns_per_msg"] = fire_ns / per;
  state.counters["heap_bytes_per_msg"] = heap_bytes;
  state.counters["max_slice_ms"] = max_slice_ms;
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_ScheduleThenFire)
    ->ArgNames({"n"})
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// Holds, pops and re-holds messages that all have one priority (the fast
// path a group without priorities takes), against interleaved priorities.
void BM_LevelsPushPop(benchmark::State& state) {
  auto levels = static_cast<uint8_t>(state.range(0));
  std::vector<tb::message_ref> messages;
  for (std::size_t i = 0; i < 256; ++i)
    messages.push_back(tb::message_record::make(
        i + 1, 0, "jobs.eu.created", std::string(16, 'x'), "",
        tb::header_list{},
        tb::message_timing{0, 0, static_cast<uint8_t>(i % levels)}));
  tb::group_ledger ledger;
  for (auto _ : state) {
    for (auto& msg : messages)
      ledger.push_back({msg, 0});
    while (ledger.has_ready())
      benchmark::DoNotOptimize(ledger.pop_front());
  }
  state.SetItemsProcessed(state.iterations() * 256);
}
BENCHMARK(BM_LevelsPushPop)->ArgNames({"levels"})->Arg(1)->Arg(10);

} // namespace
