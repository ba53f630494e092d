// The session's way out: writing what the stream can take (control frames
// first, then deliveries coalesced into frames), releasing client frames to
// the reader, and ending the session, after its last frame or when its
// stream is gone.

#include <chrono>
#include <utility>

#include "actors/session/session_actor.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// Client frames whose answers may wait unwritten before the session stops
// reading from the client.
constexpr size_t max_control_frames = 256;

// Bytes of deliveries per frame, unless a single message is larger.
constexpr size_t max_frame_bytes = 1u << 20;

// Writes the session's last log line. It is written here, by the actor,
// because only the actor knows its final counts: the bridge knows how the
// stream ended, but the counts it could ask for would lag behind what the
// actor still writes. The actor writes it as it stops (after its last
// frame, or when the bridge tells it the stream is gone, having recorded
// how), so no delivery is counted after the line. `fallback` names the end
// if the sink cannot.
void log_end(session_pointer self, const char* fallback) {
  auto& st = self->state;
  if (!st.sink || st.logs.is_closed())
    return;
  auto ended = st.sink->end_reason();
  st.logs.closed(st.current_stats(), ended.empty() ? fallback : ended,
                 self->clock().now());
}

// Ends the session once everything queued has been written, or, once its
// stream is gone, once every publish frame it read is routed.
void finish_if_drained(session_pointer self) {
  auto& st = self->state;
  if (st.stream_gone) {
    if (st.publishing == 0) {
      log_end(self, "stopped");
      self->quit(st.gone_reason);
    }
    return;
  }
  if (!st.closing || st.publishing > 0 || !st.control.empty() ||
      st.deliveries.has_ready() || !st.group_outbox.empty() ||
      requests_ready(st))
    return;
  if (st.sink)
    st.sink->finish(ec::none, "");
  log_end(self, "client_closed");
  self->quit();
}

// Queues one Dropped frame per subscription that lost messages since its
// last report.
void queue_drop_notices(session_state& st) {
  for (auto& notice : st.deliveries.take_drop_notices()) {
    auto frame = std::make_unique<pb::ServerFrame>();
    auto* dropped = frame->mutable_dropped();
    dropped->set_subscription_id(notice.subscription_id);
    dropped->set_count(notice.count);
    dropped->set_total(notice.total);
    dropped->set_reason(to_string(notice.reason));
    st.control.push_back(std::move(frame));
  }
}

// Records the latency of each delivery in `frame`, from acceptance to now:
// one clock read per frame.
void record_latencies(session_state& st, const pb::ServerFrame& frame) {
  if (!frame.has_deliveries())
    return;
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  for (auto& delivery : frame.deliveries().deliveries())
    st.stats.delivery_latency.record(now - delivery.accepted_unix_nanos());
}

} // namespace

void on_exit(session_pointer self, caf::error reason) {
  auto& st = self->state;
  if (!reason)
    return;
  if (st.sink && st.publishing > 0 && !st.stream_gone) {
    // The stream is gone (the bridge's exit: the client cancelled, or its
    // connection broke, or a write to it failed) while publish frames it
    // read are still on their way: waiting for the topic shards' answer on
    // their ids, or for a route. The shards may have marked the ids as seen
    // already, so a frame dropped now would never be delivered, while the
    // client's resend of it, with the same ids, would be confirmed as a
    // duplicate (issue 31: 88 of 3001 lost at cut connections). So route
    // them first, unconfirmed (nobody is left to read a confirm), then stop;
    // a second exit stops the session at once.
    st.stream_gone = true;
    st.closing = true;
    st.gone_reason = std::move(reason);
    return;
  }
  log_end(self, "stopped");
  self->quit(std::move(reason));
}

void release_frame(session_pointer self) {
  auto& st = self->state;
  if (!st.sink)
    return;
  if (st.control.size() >= max_control_frames) {
    ++st.owed_reads;
    return;
  }
  st.sink->frame_consumed();
}

void flush(session_pointer self) {
  auto& st = self->state;
  if (st.stream_gone) {
    // Nothing can be written any more: what waits is dropped with it.
    finish_if_drained(self);
    return;
  }
  if (!st.sink)
    return;
  for (;;) {
    std::unique_ptr<pb::ServerFrame> frame;
    if (!st.control.empty()) {
      // Answers queue in the sink behind the frame being written.
      if (!st.sink->can_queue())
        break;
      frame = std::move(st.control.front());
      st.control.pop_front();
    } else if (st.deliveries.has_ready() || !st.group_outbox.empty() ||
               requests_ready(st)) {
      // Deliveries wait until nothing is being written, and meanwhile
      // coalesce into fewer, larger frames.
      if (!st.sink->ready_to_write())
        break;
      // Losses are turned into frames only when deliveries are about to be
      // written: while the client does not read they add up in the buffer
      // (one notice per subscription) instead of queueing a frame each.
      queue_drop_notices(st);
      if (!st.control.empty())
        continue; // the notices go first
      frame = std::make_unique<pb::ServerFrame>();
      auto max = st.ctx.limits.max_frame_messages;
      auto n = drain_group_outbox(st, *frame, max);
      if (n < max)
        n += drain_requests(st, *frame, max - n);
      if (n < max)
        n += st.deliveries.drain(*frame, max - n, max_frame_bytes,
                                 now_unix_nanos());
      // Messages that expired on the way are reported right after this
      // frame (or instead of it, when every message it took had expired).
      queue_drop_notices(st);
      if (n == 0)
        continue; // only expired messages, or requests of ended
                  // subscriptions, dropped
      st.stats.delivered += n;
      record_latencies(st, *frame);
    } else {
      break;
    }
    st.sink->write(std::move(frame));
  }
  if (st.logs.losing())
    st.logs.check_caught_up(st.deliveries, self->clock().now());
  while (st.owed_reads > 0 && st.control.size() < max_control_frames) {
    --st.owed_reads;
    st.sink->frame_consumed();
  }
  finish_if_drained(self);
}

} // namespace tb
