// The log lines of refused requests: one line per refusal, at most
// `refusal_burst` per reason in `refusal_interval`, then one line saying how
// many more were suppressed.
//
//   INFO  request refused peer=ipv4:127.0.0.1:5000 request=subscribe
//         reason=invalid_pattern error="pattern \"a..b\" has an empty token"
//   WARN  37 more refusals suppressed in the last 10 s
//         peer=ipv4:127.0.0.1:5000 kind=limit_exceeded suppressed=37
//
// Each owner (a session actor, the gRPC side's log actor) keeps its own
// `refusal_log` in its state: no lock, and the time comes from the owner's
// clock. The owner schedules a timer when a call returns a delay, and calls
// `tick` when it fires, so that suppressed counts are reported even if no
// further refusal comes.

#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "actors/error.hpp"
#include "log/rate_limiter.hpp"

namespace tb {

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

} // namespace tb
