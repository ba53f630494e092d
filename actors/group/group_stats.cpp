// What a group actor reports when asked for its counters: the group's
// counters, rates and ages, and one entry per member (spec 11). Computed on
// request from the ledger and the members; nothing here runs per message.
// Also the purge of what it holds pending and the end of the group, admin
// requests like Stats.

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "actors/group/group_actor.hpp"

namespace tb {

namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// Returns milliseconds from `earlier` to `later`, 0 if negative.
uint64_t millis_between(int64_t earlier_ns, int64_t later_ns) {
  if (later_ns <= earlier_ns)
    return 0;
  return static_cast<uint64_t>((later_ns - earlier_ns) / 1'000'000);
}

int64_t unix_now_ns() {
  return duration_cast<nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

group_info describe_group(group_pointer self) {
  auto& st = self->state;
  auto now = self->clock().now();
  group_info result;
  result.name = st.group;
  result.settings = st.settings;
  result.counters = st.counters;
  auto& c = result.counters;
  c.pending = st.ledger.pending();
  c.in_flight = st.ledger.in_flight();
  c.held_bytes = st.ledger.held_bytes();
  c.members = st.members.active_count();
  c.scheduled = st.ledger.scheduled();
  if (auto due = st.ledger.next_scheduled())
    c.next_due_unix_ms = st.ledger.to_unix(*due) / 1'000'000;
  if (auto oldest = st.ledger.oldest_pending_accepted())
    c.oldest_pending_age_ms = millis_between(*oldest, unix_now_ns());
  c.received_per_second_1s = st.received_rate.per_second_last(now);
  c.received_per_second_10s = st.received_rate.per_second_last10(now);
  c.acked_per_second_1s = st.acked_rate.per_second_last(now);
  c.acked_per_second_10s = st.acked_rate.per_second_last10(now);
  // A delivery's deadline is "made (or last extended) + ack_wait", so the
  // time since then is ack_wait minus the time left.
  std::unordered_map<uint64_t, group_ledger::time_point> earliest_deadline;
  st.ledger.for_each_flight([&](uint64_t, const group_ledger::flight& f) {
    auto [i, added] = earliest_deadline.emplace(f.member, f.deadline);
    if (!added && f.deadline < i->second)
      i->second = f.deadline;
  });
  for (auto key : st.members.join_order()) {
    auto* m = st.members.find(key);
    if (m == nullptr)
      continue;
    member_stats out;
    out.peer = m->peer;
    out.subscription_id = m->subscription_id;
    out.in_flight = m->in_flight;
    out.max_in_flight = m->max_in_flight;
    out.acks = m->acks;
    out.nacks = m->nacks;
    out.rejects = m->rejects;
    out.active = m->active;
    out.stalled = m->stalled;
    out.expired = m->expired;
    if (m->stalled)
      ++c.stalled_members;
    out.client_name = m->client_name;
    out.token = m->token;
    if (auto i = earliest_deadline.find(key); i != earliest_deadline.end()) {
      auto left = i->second - now;
      auto since = st.settings.ack_wait - duration_cast<milliseconds>(left);
      out.oldest_in_flight_age_ms =
          static_cast<uint64_t>(std::max<int64_t>(since.count(), 0));
    }
    result.members.push_back(std::move(out));
  }
  result.mailbox = mailbox_length(self);
  result.replica_synced =
      st.repl.replica && st.repl.acked_seq >= st.repl.synced_at;
  result.replica_unacked = st.repl.waiting.size();
  result.confirmed_unreplicated = st.repl.confirmed_unreplicated;
  return result;
}

uint64_t purge_pending(group_pointer self) {
  auto& st = self->state;
  auto purged = static_cast<uint64_t>(
      st.ledger.clear_pending(st.repl.replica ? &st.repl.removed : nullptr));
  st.counters.dropped += purged;
  return purged;
}

uint64_t end_group(group_pointer self, bool replaced) {
  auto& st = self->state;
  for (auto& [key, member] : st.members)
    if (replaced)
      self->send(member.session, rejoin_atom_v, self->address());
    else
      self->send(member.session, kicked_atom_v, member.subscription_id,
                 "the group \"" + st.group + "\" was deleted");
  auto dropped = static_cast<uint64_t>(st.ledger.clear());
  // Publishes waiting for the replica are answered: their messages were
  // held until the delete, like any other's.
  release_waiting(self);
  st.dead_letter_lines.flush(self->clock().now());
  self->quit();
  return dropped;
}

} // namespace tb
