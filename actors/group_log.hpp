// The log lines of a group's messages that leave it unacked: one line per
// dead letter (or drop), at most `refusal_burst` per reason in
// `refusal_interval`, then one line saying how many more there were.
//
//   INFO  message dead-lettered group=workers reason=rejected
//         topic=$dlq.workers attempts=1 dead_lettered=12
//   WARN  message dead-lettered group=workers reason=max_deliveries ...
//   WARN  message dropped, not dead-lettered group=audit
//         reason=max_deliveries because=dead_letter_none dropped=3
//   WARN  40 more dead letters suppressed in the last 10 s group=workers
//         kind=max_deliveries suppressed=40
//
// A rejected message is the consumer's decision (info); one that used up
// its deliveries, or is dropped, means work was not done (warn). Each group
// actor keeps its own `dead_letter_log` in its state, as sessions keep
// their `refusal_log`.

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "actors/refusal_log.hpp"
#include "log/rate_limiter.hpp"

namespace tb {

/// Writes the dead-letter lines of one group, rate limited per reason.
class dead_letter_log {
public:
  /// A point in time of the group's clock.
  using time_point = log::rate_limiter::time_point;

  /// A span of time of the group's clock.
  using duration = log::rate_limiter::duration;

  /// What happened to one message that left the group unacked.
  struct event {
    /// `rejected` or `max_deliveries`.
    std::string_view reason;
    /// The dead letter topic it went to; empty if it was dropped instead.
    std::string_view topic;
    /// Why it was dropped: `dead_letter_none` or `dead_letter_loop`.
    std::string_view dropped_because;
    /// The deliveries the group made of it.
    uint32_t attempts = 0;
    /// The group's count of dead letters, or of drops if it was dropped.
    uint64_t count = 0;
  };

  /// Creates the log of the group `group`.
  explicit dead_letter_log(std::string group = {});

  /// Sets the group's name.
  void set_group(std::string group) {
    group_ = std::move(group);
  }

  /// Writes the line of `e` unless its reason used up its lines; returns
  /// after how long the group should call `tick`, if it should schedule
  /// that now.
  std::optional<duration> record(const event& e, time_point now);

  /// Writes the suppressed counts of windows that ended; returns after how
  /// long to call again, if a count is still pending.
  std::optional<duration> tick(time_point now);

  /// Writes every suppressed count (the group is deleted).
  void flush(time_point now);

private:
  void report(const log::rate_limiter::suppressed& s) const;

  std::string group_;
  log::rate_limiter limiter_{refusal_burst, refusal_interval};
};

} // namespace tb
