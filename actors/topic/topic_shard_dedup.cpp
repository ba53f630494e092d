// How a topic shard de-duplicates messages by `msg_id` (issue 28): the
// shard that owns a topic answers every check of its ids, so two sessions
// publishing the same id at once are ordered by its mailbox and the second
// is the duplicate. One timer per shard forgets the ids whose window ended.

#include "actors/topic/topic_shard.hpp"

namespace tb {

namespace {

// Schedules the next dedup tick for `due`, unless one is scheduled.
void schedule_dedup_tick(topic_shard_pointer self,
                         dedup_table::time_point due) {
  auto& st = self->state;
  if (st.dedup_tick_scheduled)
    return;
  st.dedup_tick_scheduled = true;
  auto now = self->clock().now();
  self->delayed_send(self, due > now ? due - now : caf::timespan{0},
                     dedup_tick_atom_v);
}

} // namespace

dedup_reply shard_dedup(topic_shard_pointer self, dedup_query& query) {
  auto& st = self->state;
  dedup_reply reply;
  auto now = self->clock().now();
  auto window = st.dedup_window;
  auto n = std::min(query.keys.size() / 2, query.ids.size());
  for (std::size_t i = 0; i < n; ++i) {
    auto key = dedup_key{query.keys[2 * i], query.keys[2 * i + 1]};
    if (auto first = st.dedup->check(key, query.ids[i], now, window)) {
      reply.positions.push_back(static_cast<uint32_t>(i));
      reply.first_ids.push_back(*first);
    }
  }
  if (st.dedup->size() > 0)
    schedule_dedup_tick(self, now + window);
  return reply;
}

void shard_dedup_tick(topic_shard_pointer self) {
  auto& st = self->state;
  st.dedup_tick_scheduled = false;
  if (auto next = st.dedup->expire(self->clock().now()))
    schedule_dedup_tick(self, *next);
}

} // namespace tb
