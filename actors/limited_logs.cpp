#include "actors/limited_logs.hpp"

#include <utility>

namespace tb {

log::level refusal_level(ec code) noexcept {
  switch (code) {
  case ec::limit_exceeded:
  case ec::group_full:
  case ec::internal:
    return log::level::warn;
  default:
    return log::level::info;
  }
}

log::level refusal_level(std::string_view reason) noexcept {
  for (auto code : {ec::limit_exceeded, ec::group_full, ec::internal})
    if (reason == to_string(code))
      return log::level::warn;
  return log::level::info;
}

refusal_log::refusal_log(std::string peer)
    : peer_(std::move(peer)), limiter_(refusal_burst, refusal_interval) {
  // nop
}

std::optional<refusal_log::duration>
refusal_log::refused(std::string_view peer, std::string_view request,
                     const error_info& err, time_point now) {
  ++count_;
  auto reason = to_string(err.code);
  auto verdict = limiter_.admit(reason, now);
  if (verdict.ended)
    report(*verdict.ended);
  if (verdict.write) {
    auto lvl = refusal_level(err.code);
    if (peer.empty())
      log::write(
          lvl, "request refused",
          {{"request", request}, {"reason", reason}, {"error", err.text}});
    else
      log::write(lvl, "request refused",
                 {{"peer", peer},
                  {"request", request},
                  {"reason", reason},
                  {"error", err.text}});
    return std::nullopt;
  }
  return limiter_.timer_needed(now);
}

std::optional<refusal_log::duration> refusal_log::tick(time_point now) {
  for (auto& s : limiter_.take_ended(now))
    report(s);
  return limiter_.timer_needed(now);
}

void refusal_log::flush(time_point now) {
  for (auto& s : limiter_.take_all(now))
    report(s);
}

void refusal_log::report(const log::rate_limiter::suppressed& s) const {
  auto lvl = refusal_level(s.kind);
  if (peer_.empty())
    log::write_suppressed(lvl, "refusals", s);
  else
    log::write_suppressed(lvl, "refusals", s, {{"peer", peer_}});
}

// -- dead letters
// ---------------------------------------------------------------

namespace {

// The level of a dead letter (or drop) for `reason`, `kind` of the limiter.
log::level level_of(std::string_view kind) {
  return kind == "rejected" ? log::level::info : log::level::warn;
}

} // namespace

dead_letter_log::dead_letter_log(std::string group) : group_(std::move(group)) {
  // nop
}

std::optional<dead_letter_log::duration>
dead_letter_log::record(const event& e, time_point now) {
  // Drops are their own kind: they say the dead letter topic is off or
  // looped, which the operator must see even among many dead letters.
  auto kind = e.topic.empty() ? std::string{e.reason} + "_dropped"
                              : std::string{e.reason};
  auto verdict = limiter_.admit(kind, now);
  if (verdict.ended)
    report(*verdict.ended);
  if (!verdict.write)
    return limiter_.timer_needed(now);
  if (e.topic.empty())
    log::warn("message dropped, not dead-lettered",
              {{"group", group_},
               {"reason", e.reason},
               {"because", e.dropped_because},
               {"attempts", e.attempts},
               {"dropped", e.count}});
  else
    log::write(level_of(kind), "message dead-lettered",
               {{"group", group_},
                {"reason", e.reason},
                {"topic", e.topic},
                {"attempts", e.attempts},
                {"dead_lettered", e.count}});
  return std::nullopt;
}

std::optional<dead_letter_log::duration> dead_letter_log::tick(time_point now) {
  for (auto& s : limiter_.take_ended(now))
    report(s);
  return limiter_.timer_needed(now);
}

void dead_letter_log::flush(time_point now) {
  for (auto& s : limiter_.take_all(now))
    report(s);
}

void dead_letter_log::report(const log::rate_limiter::suppressed& s) const {
  log::write_suppressed(level_of(s.kind), "dead letters", s,
                        {{"group", group_}});
}

} // namespace tb
