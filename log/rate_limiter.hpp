// Rate limits for log lines that a client can cause (refusals, dead letters).
//
// Per kind of event (say, the reason of a refusal), a window opens at the
// first event and lasts `interval`. The first `burst` events of a window are
// written; the rest are only counted, and when the window has ended the
// owner writes one line saying how many were suppressed:
//
//   event  event  event(suppressed) ... | window ended: "N more ... suppressed"
//   |<-------------- interval -------------->|
//
// Not thread-safe, by design: each actor owns its limiter (actor state), so
// the path that counts an event takes no lock. Time is passed in, never
// read, so tests drive it by hand and actors pass their clock's time. An
// actor reports suppressed counts on a timer it arms when `timer_needed`
// says so, so a count is reported when its window ends even if no other
// event of its kind follows.

#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "log/log.hpp"

namespace tb::log {

/// Decides which events of each kind get a log line: at most `burst` per
/// kind per `interval`, the rest counted for one summary line per window.
class rate_limiter {
public:
  /// The clock of the time points passed in (CAF's actor clock is this one).
  using clock_type = std::chrono::steady_clock;

  /// A point in time of `clock_type`.
  using time_point = clock_type::time_point;

  /// A span of time of `clock_type`.
  using duration = clock_type::duration;

  /// Events of one kind that were counted and not written.
  struct suppressed {
    /// The kind of the events.
    std::string kind;
    /// How many were suppressed.
    uint64_t count = 0;
    /// How long the window they fell in lasted.
    duration window{};
  };

  /// What to do with one event.
  struct verdict {
    /// True if the event's line should be written.
    bool write = false;
    /// The events of this kind suppressed in its previous window, which has
    /// now ended: write this report before the event's own line.
    std::optional<suppressed> ended;
  };

  /// Allows `burst` lines per kind in each `interval`.
  explicit rate_limiter(uint32_t burst = 5,
                        duration interval = std::chrono::seconds(10));

  /// Counts one event of `kind` at `now` and says whether to write it.
  verdict admit(std::string_view kind, time_point now);

  /// Returns (and forgets) the suppressed counts of windows that ended by
  /// `now`, for a timer that reports them without waiting for new events.
  std::vector<suppressed> take_ended(time_point now);

  /// Returns (and forgets) every suppressed count, ended or not, for an
  /// owner that stops; the windows cover up to `now`.
  std::vector<suppressed> take_all(time_point now);

  /// Returns when the first window that holds suppressed events ends (when
  /// a timer should call `take_ended`), or nothing if no window does.
  std::optional<time_point> next_report() const;

  /// Returns after how long the owner's timer should call `take_ended`, if
  /// a suppressed count waits for it and no timer was asked for since the
  /// last `take_ended` or `take_all`; an actor then sends itself a delayed
  /// message, at most one at a time.
  std::optional<duration> timer_needed(time_point now);

  /// Returns the number of events of every kind suppressed so far, over all
  /// windows (reported or not).
  uint64_t suppressed_total() const noexcept {
    return suppressed_total_;
  }

  /// Returns the most lines per kind and window.
  uint32_t burst() const noexcept {
    return burst_;
  }

  /// Returns the length of a window.
  duration interval() const noexcept {
    return interval_;
  }

private:
  struct window {
    std::string kind;
    time_point start;
    uint32_t written = 0;
    uint64_t suppressed = 0;
  };

  bool ended(const window& w, time_point now) const {
    return now - w.start >= interval_;
  }

  uint32_t burst_;
  duration interval_;
  // A handful of kinds at most (reasons of refusals): a vector beats a map.
  std::vector<window> windows_;
  uint64_t suppressed_total_ = 0;
  bool timer_asked_ = false;
};

/// Returns `d` in seconds as a log line says it: `10`, `2.5` or `0.3`.
std::string format_seconds(rate_limiter::duration d);

/// Writes the report of suppressed events at `lvl`: "N more WHAT suppressed
/// in the last T s", with `context` fields first, then `kind` and
/// `suppressed` (= N). `what` names the events in the plural ("refusals").
void write_suppressed(level lvl, std::string_view what,
                      const rate_limiter::suppressed& report,
                      fields context = {});

} // namespace tb::log
