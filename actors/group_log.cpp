#include "actors/group_log.hpp"

#include <utility>

namespace tb {

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
