// Time in a group (issue 29): messages held apart until due, and messages
// that wait past their TTL or the group's max_age. Both fold into the
// group's one wake-up (actors/group/group_stalls.cpp): the ledger's
// `next_due` includes the earliest due time and the earliest expiry of a
// level's front. New messages enter here too (`enqueue`).

#include <chrono>
#include <string>
#include <vector>

#include "actors/group/group_actor.hpp"

namespace tb {

namespace {

int64_t system_unix_now() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(system_clock::now().time_since_epoch())
      .count();
}

} // namespace

void init_timing(group_pointer self) {
  auto& st = self->state;
  auto unix_now = st.ctx.unix_now ? st.ctx.unix_now() : system_unix_now();
  auto clock_now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       self->clock().now().time_since_epoch())
                       .count();
  group_ledger::timing_rules rules;
  rules.unix_to_clock_ns = clock_now - unix_now;
  rules.max_age_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(st.settings.max_age)
          .count();
  rules.max_priority = st.settings.max_priority;
  st.ledger.set_rules(rules);
}

bool has_expired(group_pointer self, const group_ledger::held& held) {
  return self->state.ledger.is_expired(*held.msg, self->clock().now());
}

void expire(group_pointer self, const group_ledger::held& held) {
  auto& st = self->state;
  ++st.counters.expired_ttl;
  if (st.settings.on_expiry == expiry_action::drop) {
    ++st.counters.dropped;
    note_removed(self, held.key);
  } else
    dead_letter(self, held, "expired");
}

void hold_new(group_pointer self, message_ref msg, uint64_t key,
              uint32_t attempts) {
  auto& st = self->state;
  if (msg->delay_ms() != 0 && attempts == 0) {
    auto due = st.ledger.to_clock(msg->due_unix_nanos());
    if (due > self->clock().now()) {
      st.ledger.schedule(std::move(msg), due, key);
      return;
    }
  }
  st.ledger.push_back(group_ledger::held{std::move(msg), attempts, key});
}

void release_due(group_pointer self) {
  auto& st = self->state;
  auto now = self->clock().now();
  st.ledger.release_scheduled(now, schedule_slice);
  for (auto& held : st.ledger.take_expired(now, schedule_slice))
    expire(self, held);
}

enqueue_reply enqueue(group_pointer self, std::vector<message_ref>& msgs) {
  auto& st = self->state;
  enqueue_reply reply;
  auto replicating = static_cast<bool>(st.repl.replica);
  for (uint32_t i = 0; i < msgs.size(); ++i) {
    auto size = msgs[i]->size_bytes();
    auto full = [&] {
      return st.ledger.held_messages() >= st.settings.max_pending_messages ||
             st.ledger.held_bytes() + size > st.settings.max_pending_bytes;
    };
    if (full() && st.settings.overflow == overflow_policy::drop_oldest) {
      uint64_t dropped_key = 0;
      while (full() && st.ledger.drop_oldest_pending(&dropped_key)) {
        ++st.counters.dropped;
        note_removed(self, dropped_key);
      }
    }
    if (full()) {
      reply.refused.push_back(i);
      ++st.counters.refused;
      continue;
    }
    ++st.counters.received;
    if (replicating)
      st.repl.batch.push_back(msgs[i]);
    hold_new(self, std::move(msgs[i]), st.next_key++);
  }
  if (msgs.size() > reply.refused.size())
    st.received_rate.add(msgs.size() - reply.refused.size(),
                         self->clock().now());
  if (!reply.refused.empty())
    reply.reason = "group \"" + st.group + "\" is full (" +
                   std::to_string(st.ledger.held_messages()) + " messages, " +
                   std::to_string(st.ledger.held_bytes()) +
                   " bytes held; max_pending_messages " +
                   std::to_string(st.settings.max_pending_messages) +
                   ", max_pending_bytes " +
                   std::to_string(st.settings.max_pending_bytes) + ")";
  dispatch(self);
  return reply;
}

} // namespace tb
