#include "log/rate_limiter.hpp"

#include <algorithm>

namespace tb::log {

rate_limiter::rate_limiter(uint32_t burst, duration interval)
    : burst_(burst), interval_(interval) {
  // nop
}

rate_limiter::verdict rate_limiter::admit(std::string_view kind,
                                          time_point now) {
  verdict result;
  auto i = std::find_if(windows_.begin(), windows_.end(),
                        [&](const window& w) { return w.kind == kind; });
  if (i == windows_.end()) {
    windows_.push_back(window{std::string{kind}, now, 0, 0});
    i = std::prev(windows_.end());
  } else if (ended(*i, now)) {
    if (i->suppressed > 0)
      result.ended = suppressed{i->kind, i->suppressed, interval_};
    i->start = now;
    i->written = 0;
    i->suppressed = 0;
  }
  if (i->written < burst_) {
    ++i->written;
    result.write = true;
  } else {
    ++i->suppressed;
    ++suppressed_total_;
  }
  return result;
}

std::vector<rate_limiter::suppressed> rate_limiter::take_ended(time_point now) {
  timer_asked_ = false;
  std::vector<suppressed> result;
  auto done = [&](const window& w) {
    if (!ended(w, now))
      return false;
    if (w.suppressed > 0)
      result.push_back(suppressed{w.kind, w.suppressed, interval_});
    return true;
  };
  windows_.erase(std::remove_if(windows_.begin(), windows_.end(), done),
                 windows_.end());
  return result;
}

std::vector<rate_limiter::suppressed> rate_limiter::take_all(time_point now) {
  timer_asked_ = false;
  std::vector<suppressed> result;
  for (auto& w : windows_)
    if (w.suppressed > 0)
      result.push_back(
          suppressed{w.kind, w.suppressed, std::min(now - w.start, interval_)});
  windows_.clear();
  return result;
}

std::optional<rate_limiter::time_point> rate_limiter::next_report() const {
  std::optional<time_point> result;
  for (auto& w : windows_)
    if (w.suppressed > 0 && (!result || w.start + interval_ < *result))
      result = w.start + interval_;
  return result;
}

std::optional<rate_limiter::duration>
rate_limiter::timer_needed(time_point now) {
  if (timer_asked_)
    return std::nullopt;
  auto due = next_report();
  if (!due)
    return std::nullopt;
  timer_asked_ = true;
  return *due > now ? *due - now : duration::zero();
}

std::string format_seconds(rate_limiter::duration d) {
  auto tenths =
      (std::chrono::duration_cast<std::chrono::milliseconds>(d).count() + 50) /
      100;
  auto text = std::to_string(tenths / 10);
  if (tenths % 10 != 0)
    text += "." + std::to_string(tenths % 10);
  return text;
}

void write_suppressed(level lvl, std::string_view what,
                      const rate_limiter::suppressed& report, fields context) {
  if (!enabled(lvl))
    return;
  std::vector<field> all{context};
  all.emplace_back("kind", report.kind);
  all.emplace_back("suppressed", report.count);
  write(lvl,
        std::to_string(report.count) + " more " + std::string{what} +
            " suppressed in the last " + format_seconds(report.window) + " s",
        all);
}

} // namespace tb::log
