#include "net/log_actor.hpp"

#include <caf/send.hpp>

#include "log/log.hpp"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// Returns x - y, or 0 if a counter went backwards.
uint64_t since(uint64_t x, uint64_t y) {
  return x >= y ? x - y : 0;
}

// Asks for the counters and writes the summary line when they arrive.
void summarize(log_pointer self) {
  pb::StatsRequest request;
  // The broker totals are all the summary needs; no topic is listed (an
  // empty pattern), and the other lists are cut to one entry.
  request.set_limit(1);
  self->state.collect(request, [memory =
                                    self->state.memory](pb::StatsReply& reply,
                                                        const error_info& err) {
    if (err) {
      log::debug("no summary: the counters could not be collected",
                 {{"error", err.text}});
      return;
    }
    std::lock_guard<std::mutex> guard{memory->mutex};
    auto now = std::chrono::steady_clock::now();
    log_summary(reply.broker(), memory->previous, now - memory->previous_time);
    memory->previous = reply.broker();
    memory->previous_time = now;
  });
}

} // namespace

log_actor::behavior_type
log_actor_impl(log_pointer self, std::chrono::milliseconds summary_interval,
               stats_source collect) {
  auto& st = self->state;
  st.summary_interval = summary_interval;
  st.collect = std::move(collect);
  if (st.summary_interval.count() > 0 && st.collect)
    self->delayed_send(self, st.summary_interval, tick_atom_v);
  // Report what the refusal limits held back before the broker stops.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    self->state.refusals.flush(self->clock().now());
    self->quit(msg.reason);
  });
  return {
      [self](refused_atom, const std::string& request, const std::string& peer,
             uint8_t code, const std::string& text) {
        auto err = make_error_info(static_cast<ec>(code), text);
        if (auto wake = self->state.refusals.refused(peer, request, err,
                                                     self->clock().now()))
          self->delayed_send(self, *wake, log_tick_atom_v);
      },
      [self](log_tick_atom) {
        if (auto wake = self->state.refusals.tick(self->clock().now()))
          self->delayed_send(self, *wake, log_tick_atom_v);
      },
      [self](tick_atom) {
        // The next tick first: a slow collection does not stretch the
        // period, and the broker wakes once per interval, not more.
        self->delayed_send(self, self->state.summary_interval, tick_atom_v);
        summarize(self);
      },
  };
}

void log_summary(const pb::BrokerCounters& current,
                 const pb::BrokerCounters& previous,
                 std::chrono::steady_clock::duration period) {
  log::info("summary",
            {{"sessions", current.sessions()},
             {"topics", current.topics()},
             {"groups", current.groups()},
             {"subscriptions", current.subscriptions()},
             {"published", since(current.published(), previous.published())},
             {"delivered", since(current.delivered(), previous.delivered())},
             {"dropped", since(current.dropped(), previous.dropped())},
             {"refused", since(current.refused(), previous.refused())},
             {"held_bytes", current.held_bytes()},
             {"period_ms",
              std::chrono::duration_cast<std::chrono::milliseconds>(period)
                  .count()}});
}

void refusal_reporter::operator()(const error_info& err) const {
  if (!err || !logger)
    return;
  caf::anon_send(logger, refused_atom_v, request, peer,
                 static_cast<uint8_t>(err.code), err.text);
}

} // namespace tb
