// Counting instruments kept inside one actor each: a latency histogram and a
// per-second rate meter. Plain C++, no atomics: each actor owns its own, and
// the Stats collector adds them up on request (spec 11).

#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace tb {

/// A histogram of latencies with fixed bucket bounds (50 µs to 10 s), the
/// same in every actor so that histograms add up bucket by bucket.
struct latency_histogram {
  /// Upper bounds of the buckets in nanoseconds, ascending; one more bucket
  /// past the last bound holds the rest.
  static constexpr std::array<int64_t, 17> bounds_ns = {
      50'000,        100'000,       250'000,     500'000,       1'000'000,
      2'500'000,     5'000'000,     10'000'000,  25'000'000,    50'000'000,
      100'000'000,   250'000'000,   500'000'000, 1'000'000'000, 2'500'000'000,
      5'000'000'000, 10'000'000'000};

  /// Counts per bucket (not cumulative); empty until the first record.
  std::vector<uint64_t> counts;
  /// The sum of all recorded latencies in nanoseconds.
  int64_t sum_ns = 0;
  /// How many latencies were recorded.
  uint64_t count = 0;

  /// Records one latency; a negative one (clock skew) counts as 0.
  void record(int64_t latency_ns);

  /// Adds `other`'s counts to this one's.
  void merge(const latency_histogram& other);
};

/// @relates latency_histogram
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, latency_histogram& x) {
  return f(caf::meta::type_name("latency_histogram"), x.counts, x.sum_ns,
           x.count);
}

/// Counts events per second over the last ten full seconds, so that a group
/// can report "per second, last second" and "per second, last 10 s" without a
/// timer: `add` moves the window forward lazily. Costs one clock read per
/// batch of events, taken by the caller.
class rate_meter {
public:
  /// The clock of the meter (CAF's actor clock, simulated in tests).
  using time_point = std::chrono::steady_clock::time_point;

  /// Counts `n` events at `now`.
  void add(uint64_t n, time_point now);

  /// Returns the events of the last full second before `now`.
  double per_second_last(time_point now) const;

  /// Returns the events per second, averaged over the last ten full seconds
  /// before `now`.
  double per_second_last10(time_point now) const;

private:
  static constexpr int64_t slots = 11;

  // Returns the whole second `t` falls in.
  static int64_t second_of(time_point t);

  // Returns the events counted in second `s` (0 if that slot moved on).
  uint64_t count_in(int64_t s) const;

  std::array<uint64_t, slots> counts_{};
  std::array<int64_t, slots> seconds_{};
};

} // namespace tb
