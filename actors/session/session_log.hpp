// What a session logs about itself: its refusals (rate limited), the losses
// of its slow fan-out subscriptions, and its end with its counts.
//
// Slow consumers, per fan-out subscription:
//
//   WARN  slow consumer losing messages ...     first loss (or first after
//                                              a quiet interval)
//   WARN  slow consumer still losing messages   at most once per interval
//                                              while losses go on
//   INFO  slow consumer caught up ...          its buffer drained
//   INFO  slow consumer stopped losing messages because=unsubscribed|
//                                              session_closed
//
// Every line carries `lost` (messages lost since the previous line about
// the subscription) and `total` (lost since it subscribed). A subscription
// that catches up and falls behind again within the interval writes no new
// lines; its losses are carried into the next line. So whatever a client
// does, a subscription writes about two lines per interval at most.
//
// Plain C++: the session actor passes in its clock's time and its counters,
// so the rules are tested without an actor system.

#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/limited_logs.hpp"
#include "actors/protocol.hpp"
#include "actors/session/delivery_buffer.hpp"

namespace tb {

/// The least time between two loss lines of one subscription.
constexpr std::chrono::seconds loss_log_interval{10};

/// The log lines of one session (see the file comment).
class session_log {
public:
  /// A point in time of the session's clock.
  using time_point = refusal_log::time_point;

  /// A span of time of the session's clock.
  using duration = refusal_log::duration;

  /// Sets the client's address and the name it chose (empty if none),
  /// named in every line.
  void set_peer(std::string peer, std::string client_name = {});

  // -- refusals ---------------------------------------------------------------

  /// Logs a refused request of the session's client, or of `peer` if given
  /// (see `refusal_log::refused`); returns after how long the session should
  /// call `tick`, if it should schedule that now.
  std::optional<duration> refused(std::string_view request,
                                  const error_info& err, time_point now,
                                  std::string_view peer = {}) {
    return refusals_.refused(peer.empty() ? peer_ : peer, request, err, now);
  }

  /// Reports suppressed refusals whose window ended; returns after how long
  /// to call again, if needed.
  std::optional<duration> tick(time_point now) {
    return refusals_.tick(now);
  }

  // -- slow consumers ---------------------------------------------------------

  /// Remembers the pattern of a fan-out subscription.
  void subscribed(uint64_t subscription_id, std::string_view pattern);

  /// Forgets a fan-out subscription; writes its last loss line if the log
  /// said it was losing messages.
  void unsubscribed(uint64_t subscription_id, time_point now);

  /// Takes the losses a delivery buffer counted since the last call.
  void lost(const std::vector<drop_notice>& losses, time_point now);

  /// Returns true while a subscription is losing messages (call
  /// `check_caught_up` after writing deliveries then).
  bool losing() const noexcept {
    return losing_ > 0;
  }

  /// Ends the losses of subscriptions whose buffer drained.
  void check_caught_up(const delivery_buffer& buffer, time_point now);

  // -- the end ----------------------------------------------------------------

  /// Writes the session's last line (once; later calls do nothing): how it
  /// `ended`, and from its final `stats` how long it lasted and its counts,
  /// after the last loss lines and suppressed refusals.
  void closed(const session_stats& stats, std::string_view ended,
              time_point now);

  /// Writes one line about the session's client at `lvl`: its `peer` (and
  /// `name`), then `rest` (e.g. a membership re-joining its group).
  void note(log::level lvl, std::string_view msg, log::fields rest) const;

  /// Returns true once `closed` wrote the last line.
  bool is_closed() const noexcept {
    return closed_;
  }

private:
  struct subscription {
    std::string pattern;
    bool losing = false;    // losing now, as far as the log knows
    bool announced = false; // this loss was written as "losing"
    bool logged = false;    // some line was written
    uint64_t unlogged = 0;  // lost since the previous line
    uint64_t total = 0;     // lost since it subscribed
    time_point last_line;
  };

  void write(log::level lvl, std::string_view msg, uint64_t id,
             subscription& sub, time_point now, const char* because = nullptr);

  // Returns the fields `peer` and (if set) `name`, then `rest`.
  std::vector<log::field> who(log::fields rest) const;

  std::string peer_;
  std::string client_name_;
  refusal_log refusals_;
  std::unordered_map<uint64_t, subscription> subscriptions_;
  std::size_t losing_ = 0;
  bool closed_ = false;
};

} // namespace tb
