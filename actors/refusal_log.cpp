#include "actors/refusal_log.hpp"

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

} // namespace tb
