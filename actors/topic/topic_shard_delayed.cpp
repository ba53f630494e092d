// How a topic shard holds delayed fan-out messages and hands them out when
// they fall due: one timer per shard, armed for the earliest due time (a
// CAF delayed message; simulated time in tests). A message falls due at
// most one timer tick late; a burst of due messages goes out in batches of
// `due_batch`, a pause apart, so that a shard never holds up its other
// work (resolves, subscribes) for long.

#include <chrono>
#include <unordered_map>

#include "actors/topic/topic_shard.hpp"

namespace tb {

namespace {

// Arms the shard's timer for the earliest due time, unless a timer that
// fires no later is already armed.
void arm_timer(topic_shard_pointer self) {
  auto& st = self->state;
  auto next = st.delayed.next_due();
  if (!next || (st.armed && *st.armed <= *next))
    return;
  st.armed = *next;
  auto now = self->clock().now();
  if (*next <= now)
    self->send(self, due_atom_v);
  else
    self->delayed_send(self, *next - now, due_atom_v);
}

} // namespace

enqueue_reply shard_schedule(topic_shard_pointer self, delayed_batch& batch) {
  auto& st = self->state;
  enqueue_reply reply;
  auto now = self->clock().now();
  for (std::size_t i = 0; i < batch.items.size(); ++i) {
    auto& item = batch.items[i];
    // Due its delay after it reached the shard: the trip from the publisher
    // (microseconds) adds to the delay, never subtracts from it.
    auto due =
        now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::milliseconds{item.message->delay_ms()});
    if (auto err = st.delayed.hold(due, std::move(item.message),
                                   std::move(item.route))) {
      reply.refused.push_back(static_cast<uint32_t>(i));
      if (reply.reason.empty())
        reply.reason = std::move(err.text);
    }
  }
  arm_timer(self);
  return reply;
}

void shard_fire_due(topic_shard_pointer self) {
  auto& st = self->state;
  auto now = self->clock().now();
  if (st.armed && *st.armed <= now)
    st.armed.reset();
  auto due = st.delayed.take_due(now, due_batch);
  // One batch per subscriber session, in due-time order.
  std::vector<std::pair<session_actor, fanout_batch>> batches;
  std::unordered_map<caf::actor_addr, std::size_t> index;
  for (auto& entry : due)
    for (auto& target : entry.route->fanout) {
      auto [pos, added] =
          index.emplace(target.session.address(), batches.size());
      if (added)
        batches.emplace_back(target.session, fanout_batch{});
      batches[pos->second].second.items.push_back(
          fanout_item{entry.message, target.subscription_id});
    }
  for (auto& [dest, batch] : batches)
    self->send(dest, deliver_atom_v, std::move(batch));
  auto next = st.delayed.next_due();
  if (due.size() == due_batch && next && *next <= now &&
      (!st.armed || *st.armed > now + due_pause)) {
    // More are due: go on after a pause (see expire_topics).
    st.armed = now + due_pause;
    self->delayed_send(self, due_pause, due_atom_v);
    return;
  }
  arm_timer(self);
}

int64_t next_due_unix_ms(topic_shard_pointer self) {
  auto next = self->state.delayed.next_due();
  if (!next)
    return 0;
  using namespace std::chrono;
  auto left = duration_cast<milliseconds>(*next - self->clock().now());
  auto now =
      duration_cast<milliseconds>(system_clock::now().time_since_epoch());
  return (now + std::max(left, milliseconds{0})).count();
}

} // namespace tb
