#include "actors/meters.hpp"

#include <algorithm>

namespace tb {

void latency_histogram::record(int64_t latency_ns) {
  if (counts.empty())
    counts.resize(bounds_ns.size() + 1);
  latency_ns = std::max<int64_t>(latency_ns, 0);
  auto i = std::lower_bound(bounds_ns.begin(), bounds_ns.end(), latency_ns);
  ++counts[static_cast<size_t>(i - bounds_ns.begin())];
  sum_ns += latency_ns;
  ++count;
}

void latency_histogram::merge(const latency_histogram& other) {
  if (other.counts.empty())
    return;
  if (counts.empty())
    counts.resize(bounds_ns.size() + 1);
  for (size_t i = 0; i < counts.size() && i < other.counts.size(); ++i)
    counts[i] += other.counts[i];
  sum_ns += other.sum_ns;
  count += other.count;
}

int64_t rate_meter::second_of(time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch())
      .count();
}

void rate_meter::add(uint64_t n, time_point now) {
  auto s = second_of(now);
  auto slot = static_cast<size_t>(((s % slots) + slots) % slots);
  if (seconds_[slot] != s) {
    seconds_[slot] = s;
    counts_[slot] = 0;
  }
  counts_[slot] += n;
}

uint64_t rate_meter::count_in(int64_t s) const {
  auto slot = static_cast<size_t>(((s % slots) + slots) % slots);
  return seconds_[slot] == s ? counts_[slot] : 0;
}

double rate_meter::per_second_last(time_point now) const {
  return static_cast<double>(count_in(second_of(now) - 1));
}

double rate_meter::per_second_last10(time_point now) const {
  auto s = second_of(now);
  uint64_t sum = 0;
  for (int64_t i = 1; i <= 10; ++i)
    sum += count_in(s - i);
  return static_cast<double>(sum) / 10.0;
}

} // namespace tb
