// Benchmarks of a consumer group's books (actors/group/group_ledger.hpp), the
// work the group actor does per message on the hot path, without actors:
// hold a published message, dispatch it (pop + start a delivery with a
// deadline), ack it (finish) and sweep deadlines once per batch as the
// group's tick does. Items processed = messages.
//
//   build/bench/group_ledger_bench
//   build/bench/group_ledger_bench --benchmark_repetitions=3

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "actors/group/group_ledger.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = tb::group_ledger::time_point;

// Members the deliveries rotate over, as in scenario S3.
constexpr uint64_t members = 4;

// Returns `count` distinct 128-byte messages, each shared as the broker
// shares a routed message.
std::vector<tb::message_ref> make_messages(std::size_t count) {
  std::vector<tb::message_ref> result;
  result.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    result.push_back(tb::message_record::make(i + 1, 0, "orders.eu.created",
                                              std::string(128, 'x')));
  }
  return result;
}

// Holds, dispatches and acks `batch` messages per step, with
// `backlog` messages queued behind them throughout.
void BM_HoldDispatchAck(benchmark::State& state) {
  auto batch = static_cast<std::size_t>(state.range(0));
  auto backlog = static_cast<std::size_t>(state.range(1));
  auto messages = make_messages(batch);
  tb::group_ledger ledger;
  for (std::size_t i = 0; i < backlog; ++i)
    ledger.push_back({messages[i % batch], 0});
  auto now = clock_type{} + 1h;
  uint64_t next_delivery = 1;
  std::vector<uint64_t> ids(batch);
  for (auto _ : state) {
    for (auto& msg : messages)
      ledger.push_back({msg, 0});
    for (std::size_t i = 0; i < batch; ++i) {
      auto held = ledger.pop_front();
      ++held.attempts;
      ids[i] = next_delivery++;
      ledger.start(ids[i], std::move(held), ids[i] % members, now + 30s);
    }
    for (auto id : ids)
      benchmark::DoNotOptimize(ledger.finish(id));
    now += 1ms;
    benchmark::DoNotOptimize(ledger.expired(now));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch));
}
BENCHMARK(BM_HoldDispatchAck)
    ->ArgNames({"batch", "backlog"})
    ->Args({1, 0})
    ->Args({256, 0})
    ->Args({256, 100'000});

// Finds a delivery among `in_flight` in flight (an ack's lookup).
void BM_FindInFlight(benchmark::State& state) {
  auto in_flight = static_cast<uint64_t>(state.range(0));
  auto messages = make_messages(1);
  tb::group_ledger ledger;
  auto deadline = clock_type{} + 30s;
  for (uint64_t id = 1; id <= in_flight; ++id)
    ledger.start(id, {messages[0], 1}, id % members, deadline);
  uint64_t id = 0;
  for (auto _ : state) {
    id = id % in_flight + 1;
    benchmark::DoNotOptimize(ledger.find(id));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FindInFlight)->ArgName("in_flight")->Arg(256)->Arg(65'536);

// Redelivers `batch` expired deliveries per step: deadline sweep, finish,
// requeue at the head, dispatch again.
void BM_ExpireRedeliver(benchmark::State& state) {
  auto batch = static_cast<std::size_t>(state.range(0));
  auto messages = make_messages(batch);
  tb::group_ledger ledger;
  auto now = clock_type{} + 1h;
  uint64_t next_delivery = 1;
  for (auto& msg : messages) {
    auto id = next_delivery++;
    ledger.start(id, {msg, 1}, id % members, now + 30s);
  }
  for (auto _ : state) {
    now += 31s;
    for (auto id : ledger.expired(now)) {
      auto flight = ledger.finish(id);
      ledger.push_front(std::move(flight->message));
    }
    while (ledger.has_ready()) {
      auto held = ledger.pop_front();
      ++held.attempts;
      auto id = next_delivery++;
      ledger.start(id, std::move(held), id % members, now + 30s);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch));
}
BENCHMARK(BM_ExpireRedeliver)->ArgName("batch")->Arg(256);

} // namespace
