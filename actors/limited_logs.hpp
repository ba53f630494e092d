// The rate-limited log lines of actors: refusals (of a session, or of the
// gRPC side's log actor) and dead letters (of a group). A client decides
// how many of these it causes, so each kind writes at most `refusal_burst`
// lines per reason in `refusal_interval`, then one line saying how many
// more there were:
//
//   INFO  request refused peer=ipv4:127.0.0.1:5000 request=subscribe
//         reason=invalid_pattern error="pattern \"a..b\": empty token 2"
//   WARN  37 more refusals suppressed in the last 10 s
//         peer=ipv4:127.0.0.1:5000 kind=limit_exceeded suppressed=37
//   INFO  message dead-lettered group=workers reason=rejected
//         topic=$dlq.workers attempts=1 dead_lettered=12
//   WARN  message dead-lettered group=workers reason=max_deliveries ...
//   WARN  message dropped, not dead-lettered group=audit
//         reason=max_deliveries because=dead_letter_none dropped=3
//   WARN  40 more dead letters suppressed in the last 10 s group=workers
//         kind=max_deliveries suppressed=40
//
// Each owner keeps its log in its actor state: no lock, and the time comes
// from the owner's clock. When a call returns a delay, the owner sends
// itself `log_tick_atom` after it and calls `tick`, so that suppressed
// counts are reported when their window ends even if nothing else happens.
// A rejected message is the consumer's decision (info); one that used up
// its deliveries, or is dropped, means work was not done (warn).

#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "log/rate_limiter.hpp"
#include "routing/error.hpp"

namespace tb {

// -- refusals -----------------------------------------------------------------

/// Lines written per reason and owner before the rest are only counted.
constexpr uint32_t refusal_burst = 5;

/// The window of `refusal_burst`.
constexpr std::chrono::seconds refusal_interval{10};

/// Returns the level a refusal is logged at: `warn` for a limit, a full
/// group or an internal error (the broker's capacity or a bug), `info` for
/// a client's own mistake or a refusal while stopping.
log::level refusal_level(ec code) noexcept;

/// Returns the level of refusals whose reason is named `reason`.
log::level refusal_level(std::string_view reason) noexcept;

/// Writes the refusal lines of one owner, rate limited per reason.
class refusal_log {
public:
  /// A point in time of the owner's clock.
  using time_point = log::rate_limiter::time_point;

  /// A span of time of the owner's clock.
  using duration = log::rate_limiter::duration;

  /// Names `peer` in the suppressed-count lines (one client's refusals);
  /// empty when the owner logs refusals of many clients.
  explicit refusal_log(std::string peer = {});

  /// Sets the peer named in the suppressed-count lines.
  void set_peer(std::string peer) {
    peer_ = std::move(peer);
  }

  /// Counts a refusal of `request` (a frame kind like `subscribe`, or a call
  /// like `Publish`) from `peer` and writes its line unless its reason used
  /// up its lines. Returns after how long the owner should call `tick`, if
  /// it should schedule that now (no earlier call asked for one).
  std::optional<duration> refused(std::string_view peer,
                                  std::string_view request,
                                  const error_info& err, time_point now);

  /// Writes the suppressed counts of windows that ended; returns after how
  /// long to call again, if a count is still pending.
  std::optional<duration> tick(time_point now);

  /// Writes every suppressed count, ended or not (the owner stops).
  void flush(time_point now);

  /// Returns how many refusals were counted, written or not.
  uint64_t count() const noexcept {
    return count_;
  }

private:
  void report(const log::rate_limiter::suppressed& s) const;

  std::string peer_;
  log::rate_limiter limiter_;
  uint64_t count_ = 0;
};

// -- dead letters -------------------------------------------------------------

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
