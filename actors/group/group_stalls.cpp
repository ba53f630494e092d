// The group's timing and the health of its members: the one wake-up a group
// keeps for its earliest deadline or delay, and the members marked stalled
// because their deliveries expire again and again (spec 6,
// docs/semantics.md).
//
// Wake-ups: the ledger knows its next due time (`next_due`, O(1)). The group
// keeps a wake-up (a delayed tick_atom to itself) pending at that time, or
// at most `wake_horizon` ahead. A due time earlier than every pending wake-up
// (a nack with a short delay) adds one more; the others arrive, find little
// or nothing due and cost one message each. So a redelivery or expiry fires
// when due (the clock's and the mailbox's delay aside), with no timer per
// message, and at most `wake_horizon / wake_slack + 1` wake-ups pending.

#include <algorithm>

#include "actors/group/group_actor.hpp"
#include "log/log.hpp"

namespace tb {

void schedule_wake(group_pointer self) {
  auto& st = self->state;
  auto due = st.ledger.next_due();
  if (!due)
    return;
  auto now = self->clock().now();
  auto at = std::min(*due, now + wake_horizon);
  if (!st.wakes.empty() && *st.wakes.begin() <= at + wake_slack)
    return;
  st.wakes.insert(at);
  if (at <= now)
    self->send(self, tick_atom_v);
  else
    self->delayed_send(self, at - now, tick_atom_v);
}

void wake_arrived(group_pointer self) {
  auto& wakes = self->state.wakes;
  // Wake-ups arrive in the order of their due times.
  if (!wakes.empty())
    wakes.erase(wakes.begin());
}

namespace {

// Returns true if a line of `kind` ("stalled", "unstalled") may be written
// now; first writes how many of that kind the last window suppressed.
bool admit_stall_line(group_pointer self, std::string_view kind) {
  auto& st = self->state;
  auto verdict = st.stall_lines.admit(kind, self->clock().now());
  if (verdict.ended)
    log::warn("more group member stall changes suppressed",
              {{"group", st.group},
               {"kind", verdict.ended->kind},
               {"suppressed", verdict.ended->count}});
  return verdict.write;
}

} // namespace

void note_expired(group_pointer self, uint64_t key, std::size_t n) {
  auto& st = self->state;
  auto& member = st.members.at(key);
  member.expired += n;
  ++member.timeouts_in_row;
  st.counters.expired += n;
  st.expiring.insert(key);
  if (member.stalled || !member.active || member.timeouts_in_row < stall_after)
    return;
  member.stalled = true;
  st.policy->left(key);
  if (!admit_stall_line(self, "stalled"))
    return;
  log::warn("group member stalled, no new deliveries until it answers",
            {{"group", st.group},
             {"peer", member.peer},
             {"subscription", member.subscription_id},
             {"timeouts_in_row", member.timeouts_in_row},
             {"expired", member.expired},
             {"in_flight", member.in_flight}});
}

void note_answer(group_pointer self, const session_actor& session) {
  auto& st = self->state;
  if (st.expiring.empty())
    return;
  for (auto i = st.expiring.begin(); i != st.expiring.end();) {
    auto* member = st.members.find(*i);
    if (member == nullptr || member->session != session) {
      ++i;
      continue;
    }
    auto in_row = member->timeouts_in_row;
    member->timeouts_in_row = 0;
    if (member->stalled) {
      member->stalled = false;
      if (member->active)
        st.policy->joined(*i, *member);
      if (admit_stall_line(self, "unstalled"))
        log::info("group member answered, no longer stalled",
                  {{"group", st.group},
                   {"peer", member->peer},
                   {"subscription", member->subscription_id},
                   {"timeouts_in_row", in_row}});
    }
    i = st.expiring.erase(i);
  }
}

void forget_expiries(group_pointer self, uint64_t key) {
  self->state.expiring.erase(key);
}

bool has_new_receiver(group_pointer self, const group_ledger::held& held) {
  auto& members = self->state.members;
  return std::any_of(members.begin(), members.end(), [&](const auto& kv) {
    return kv.second.may_receive() && !held.went_to(kv.first);
  });
}

} // namespace tb
