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

uint64_t topic_dedup_window(const topic_shard_state& st,
                            const std::vector<group_actor>& groups) {
  auto window = st.dedup_window;
  if (!st.group_windows.empty())
    for (auto& group : groups)
      if (auto i = st.group_windows.find(group.address());
          i != st.group_windows.end())
        window = std::max(window, i->second);
  return static_cast<uint64_t>(window.count());
}

dedup_reply shard_dedup(topic_shard_pointer self, dedup_query& query) {
  auto& st = self->state;
  dedup_reply reply;
  auto now = self->clock().now();
  auto n = std::min(query.keys.size() / 2, query.ids.size());
  auto shortest = std::chrono::milliseconds::max();
  // Each check's index line is likely a cache miss (the table is larger
  // than the caches): fetch a few keys ahead so that the misses overlap.
  constexpr std::size_t ahead = 16;
  auto& table = *st.dedup;
  for (std::size_t i = 0; i < std::min(ahead, n); ++i)
    table.prefetch(dedup_key{query.keys[2 * i], query.keys[2 * i + 1]});
  for (std::size_t i = 0; i < n; ++i) {
    if (i + ahead < n)
      table.prefetch(dedup_key{query.keys[2 * (i + ahead)],
                               query.keys[2 * (i + ahead) + 1]});
    auto key = dedup_key{query.keys[2 * i], query.keys[2 * i + 1]};
    auto window = st.dedup_window;
    if (i < query.windows_ms.size() && query.windows_ms[i] != 0)
      window = std::chrono::milliseconds{query.windows_ms[i]};
    shortest = std::min(shortest, window);
    uint64_t first = 0;
    if (table.seen(key, query.ids[i], now, window, first)) {
      reply.positions.push_back(static_cast<uint32_t>(i));
      reply.first_ids.push_back(first);
    }
  }
  // The tick is due when the shortest new window ends at the latest; it
  // then reschedules itself for the oldest id left.
  if (st.dedup->size() > 0 && n > 0)
    schedule_dedup_tick(self, now + shortest);
  return reply;
}

void shard_dedup_tick(topic_shard_pointer self) {
  auto& st = self->state;
  st.dedup_tick_scheduled = false;
  if (auto next = st.dedup->expire(self->clock().now()))
    schedule_dedup_tick(self, *next);
}

} // namespace tb
