#include "actors/group/group_actor.hpp"

#include <algorithm>

#include "actors/policies/policy_registry.hpp"
#include "actors/policies/round_robin_policy.hpp"

namespace tb {

namespace {

using time_point = group_ledger::time_point;

time_point now(group_pointer self) {
  return self->clock().now();
}

// Returns the member that `held` goes to now, or 0 to hold it back. A
// redelivery prefers a member it has not been to: the members it went to
// are passed over for one pick, and only if the policy finds no other
// member with credit may they get it again. On its last attempt (see
// `used_up`) it waits for a new member; `give_up` is set when none may take
// it (gone, stalled, or passed over by the policy, as key_hash does).
uint64_t pick_member(group_pointer self, const group_ledger::held& held,
                     bool& give_up) {
  auto& st = self->state;
  auto pick = [&]() -> uint64_t {
    auto key = st.policy->pick(*held.msg, st.members);
    auto* member = key == 0 ? nullptr : st.members.find(key);
    return member != nullptr && member->has_credit() ? key : 0;
  };
  if (!held.tries)
    return pick();
  auto set_excluded = [&](bool value) {
    held.for_each_try([&](uint64_t key) {
      if (auto* member = st.members.find(key))
        member->excluded = value;
    });
  };
  set_excluded(true);
  auto key = pick();
  set_excluded(false);
  if (key != 0)
    return key;
  auto limit = st.settings.max_deliveries;
  if (limit == 0 || held.attempts < limit)
    return pick();
  auto waiting =
      std::any_of(st.members.begin(), st.members.end(), [&](const auto& kv) {
        auto& m = kv.second;
        return m.may_receive() && !held.went_to(kv.first) &&
               m.in_flight >= m.max_in_flight;
      });
  give_up = !waiting;
  return 0;
}

} // namespace

// Hands held messages to the members the policy picks, one batch per
// member, while some member has credit. Messages the policy holds back keep
// their place at the head of the queue, in order.
void dispatch(group_pointer self) {
  auto& st = self->state;
  auto credit = st.members.free_credit();
  std::unordered_map<uint64_t, group_delivery_batch> out;
  std::vector<group_ledger::held> passed;
  auto deadline = now(self) + st.settings.ack_wait;
  auto at = now(self);
  while (credit > 0 && st.ledger.has_ready() &&
         passed.size() < policy_lookahead) {
    auto held = st.ledger.pop_front();
    if (st.ledger.is_expired(*held.msg, at)) {
      expire(self, held);
      continue;
    }
    auto give_up = false;
    auto key = pick_member(self, held, give_up);
    if (give_up) {
      dead_letter(self, held, "max_deliveries");
      continue;
    }
    if (key == 0) {
      passed.push_back(std::move(held));
      continue;
    }
    auto& member = st.members.at(key);
    ++held.attempts;
    auto id = st.ctx.delivery_ids->reserve(1);
    auto& delivery = out[key].items.emplace_back(group_delivery{
        held.msg, member.subscription_id, id, held.attempts, {}});
    attach_reply(self, delivery);
    ++member.in_flight;
    --credit;
    ++st.counters.delivered;
    if (held.attempts > 1)
      ++st.counters.redelivered;
    st.ledger.start(id, std::move(held), key, deadline);
  }
  for (auto i = passed.rbegin(); i != passed.rend(); ++i)
    st.ledger.push_front(std::move(*i));
  if (st.repl.replica)
    replicate_round(self, out);
  for (auto& [member_key, batch] : out)
    self->send(st.members.at(member_key).session, gdeliver_atom_v,
               std::move(batch));
  schedule_wake(self);
}

namespace {

// Stops new deliveries to the member `key` and tells the policy.
void deactivate(group_pointer self, uint64_t key) {
  auto& member = self->state.members.at(key);
  if (!member.active)
    return;
  member.active = false;
  // A stalled member is off the policy's books already; a member that left
  // is no longer stalled (it takes nothing either way).
  if (member.stalled)
    member.stalled = false;
  else
    self->state.policy->left(key);
}

// Removes a member that left and holds nothing any more.
void release_member_if_done(group_pointer self, uint64_t key) {
  auto& st = self->state;
  auto* member = st.members.find(key);
  if (member == nullptr || member->active || member->in_flight > 0)
    return;
  auto session = member->session;
  forget_expiries(self, key);
  st.members.erase(key);
  auto still_member =
      std::any_of(st.members.begin(), st.members.end(),
                  [&](const auto& kv) { return kv.second.session == session; });
  if (!still_member)
    self->demonitor(session.address());
}

// Ends a delivery answered by `session`; nothing (and a stale answer
// counted) if it is unknown, superseded or another session's.
std::optional<group_ledger::flight>
take_answered(group_pointer self, const session_actor& session, uint64_t id) {
  auto& st = self->state;
  auto* f = st.ledger.find(id);
  if (f == nullptr || st.members.at(f->member).session != session) {
    ++st.counters.stale_answers;
    return std::nullopt;
  }
  auto result = st.ledger.finish(id);
  --st.members.at(result->member).in_flight;
  return result;
}

// Applies `fn` to each delivery answered validly, then frees members that
// left and dispatches. Any answer, even a stale one, shows the session
// reads: its members are no longer stalled.
template <class F>
void answer(group_pointer self, const session_actor& session,
            const std::vector<uint64_t>& ids, F fn) {
  note_answer(self, session);
  std::vector<uint64_t> touched;
  for (auto id : ids)
    if (auto f = take_answered(self, session, id)) {
      touched.push_back(f->member);
      fn(std::move(*f));
    }
  for (auto key : touched)
    release_member_if_done(self, key);
  dispatch(self);
}

// Redelivers what expired and releases delayed messages that are due.
void on_tick(group_pointer self) {
  auto& st = self->state;
  wake_arrived(self);
  std::unordered_map<uint64_t, std::vector<uint64_t>> expired_by_member;
  std::vector<uint64_t> touched;
  std::vector<group_ledger::held> again;
  for (auto id : st.ledger.expired(now(self))) {
    auto f = st.ledger.finish(id);
    auto& member = st.members.at(f->member);
    --member.in_flight;
    expired_by_member[f->member].push_back(id);
    touched.push_back(f->member);
    f->message.add_try(f->member);
    note_returned(self, f->message.key);
    again.push_back(std::move(f->message));
  }
  for (auto& [key, ids] : expired_by_member)
    note_expired(self, key, ids.size());
  // The oldest first in line, as when a member is gone.
  requeue_in_order(self, std::move(again));
  for (auto& [key, ids] : expired_by_member)
    self->send(st.members.at(key).session, expired_atom_v, std::move(ids));
  for (auto key : touched)
    release_member_if_done(self, key);
  st.ledger.release_delayed(now(self));
  release_due(self);
  dispatch(self);
}

// Holds every message in flight to a dead session again, at the head of the
// queue in their original order, and forgets the session's members.
void on_session_down(group_pointer self, const caf::actor_addr& addr) {
  auto& st = self->state;
  std::vector<uint64_t> gone;
  for (auto& [key, member] : st.members)
    if (member.session.address() == addr)
      gone.push_back(key);
  // Delivery ids grow with time: sorted, they are the original order
  // across the session's memberships.
  std::vector<uint64_t> ids;
  for (auto key : gone) {
    auto mine = st.ledger.flights_of(key);
    ids.insert(ids.end(), mine.begin(), mine.end());
  }
  std::sort(ids.begin(), ids.end());
  std::vector<group_ledger::held> again;
  for (auto id : ids) {
    auto f = st.ledger.finish(id);
    f->message.add_try(f->member);
    note_returned(self, f->message.key);
    again.push_back(std::move(f->message));
  }
  requeue_in_order(self, std::move(again));
  for (auto key : gone) {
    st.members.at(key).in_flight = 0;
    deactivate(self, key);
    release_member_if_done(self, key);
  }
  dispatch(self);
}

caf::ok_atom join(group_pointer self, session_actor session, member_spec spec) {
  auto& st = self->state;
  auto max_in_flight = spec.max_in_flight == 0 ? 256u : spec.max_in_flight;
  max_in_flight = std::min(max_in_flight, st.ctx.max_in_flight_limit);
  for (auto& [key, member] : st.members)
    if (member.session == session &&
        member.subscription_id == spec.subscription_id) {
      // A member that left but still holds deliveries may join again with
      // the same subscription id: it takes new deliveries again.
      if (!member.active) {
        member.active = true;
        member.max_in_flight = max_in_flight;
        member.tags = std::move(spec.tags);
        st.policy->joined(key, member);
        dispatch(self);
      }
      return caf::ok_atom_v;
    }
  auto monitored =
      std::any_of(st.members.begin(), st.members.end(),
                  [&](const auto& kv) { return kv.second.session == session; });
  if (!monitored)
    self->monitor(session);
  group_member member;
  member.session = std::move(session);
  member.subscription_id = spec.subscription_id;
  member.max_in_flight = max_in_flight;
  member.tags = std::move(spec.tags);
  member.peer = std::move(spec.peer);
  member.client_name = std::move(spec.client_name);
  member.token = std::move(spec.token);
  auto key = st.members.add(std::move(member));
  st.policy->joined(key, st.members.at(key));
  dispatch(self);
  return caf::ok_atom_v;
}

} // namespace

group_actor::behavior_type group_actor_impl(group_pointer self,
                                            std::string name,
                                            group_settings settings,
                                            group_context ctx) {
  auto& st = self->state;
  st.group = std::move(name);
  st.settings = std::move(settings);
  st.ctx = std::move(ctx);
  st.dead_letter_lines.set_group(st.group);
  st.policy = policy_registry::make(st.settings.policy, st.settings);
  if (st.policy == nullptr)
    st.policy = std::make_unique<round_robin_policy>();
  init_timing(self);
  start_from_seed(self);
  self->set_down_handler([self](caf::down_msg& msg) {
    if (!replica_down(self, msg))
      on_session_down(self, msg.source);
  });
  return {
      [self](enqueue_atom,
             std::vector<message_ref>& msgs) -> caf::result<enqueue_reply> {
        auto n = msgs.size();
        return confirm_enqueue(self, enqueue(self, msgs), n);
      },
      [self](join_atom, session_actor session, member_spec& spec) {
        return join(self, std::move(session), std::move(spec));
      },
      [self](leave_atom, const session_actor& session,
             uint64_t subscription_id) {
        auto& st = self->state;
        for (auto& [key, member] : st.members)
          if (member.session == session &&
              member.subscription_id == subscription_id) {
            deactivate(self, key);
            release_member_if_done(self, key);
            break;
          }
      },
      [self](ack_atom, const session_actor& session,
             const std::vector<uint64_t>& ids) {
        uint64_t acked = 0;
        answer(self, session, ids, [self, &acked](group_ledger::flight f) {
          auto& st = self->state;
          forget_request(self, f.message.msg->id());
          note_removed(self, f.message.key);
          ++st.counters.acked;
          ++acked;
          if (auto* member = st.members.find(f.member))
            ++member->acks;
        });
        if (acked > 0)
          self->state.acked_rate.add(acked, now(self));
      },
      [self](nack_atom, const session_actor& session,
             const std::vector<uint64_t>& ids, uint32_t delay_ms) {
        answer(self, session, ids, [self, delay_ms](group_ledger::flight f) {
          auto& st = self->state;
          if (auto* member = st.members.find(f.member))
            ++member->nacks;
          f.message.add_try(f.member);
          note_returned(self, f.message.key);
          if (delay_ms == 0 || used_up(self, f.message) ||
              has_expired(self, f.message)) {
            requeue(self, std::move(f.message));
            return;
          }
          st.ledger.delay(std::move(f.message),
                          now(self) + std::chrono::milliseconds{delay_ms});
        });
      },
      [self](reject_atom, const session_actor& session,
             const std::vector<uint64_t>& ids) {
        answer(self, session, ids, [self](group_ledger::flight f) {
          if (auto* member = self->state.members.find(f.member))
            ++member->rejects;
          dead_letter(self, f.message, "rejected");
        });
      },
      [self](progress_atom, const session_actor& session,
             const std::vector<uint64_t>& ids) {
        auto& st = self->state;
        note_answer(self, session);
        auto deadline = now(self) + st.settings.ack_wait;
        for (auto id : ids) {
          auto* f = st.ledger.find(id);
          if (f == nullptr || st.members.at(f->member).session != session)
            ++st.counters.stale_answers;
          else
            st.ledger.extend(id, deadline);
        }
      },
      [self](tick_atom) { on_tick(self); },
      [self](log_tick_atom) {
        if (auto wake = self->state.dead_letter_lines.tick(now(self)))
          self->delayed_send(self, *wake, log_tick_atom_v);
      },
      [self](stats_atom) { return describe_group(self); },
      [self](purge_atom) {
        auto purged = purge_pending(self);
        if (self->state.repl.replica)
          replicate_round(self, {});
        return purged;
      },
      [self](request_atom, message_ref& msg, const reply_target& target) {
        return hold_request(self, msg, target);
      },
      [self](replica_atom, replica_actor replica, uint64_t term) {
        attach_replica(self, std::move(replica), term);
      },
      [self](rack_atom, uint64_t seq) { replica_acked(self, seq); },
      [self](delete_atom) { return end_group(self, false); },
      [self](delete_atom, replaced_atom) { return end_group(self, true); },
  };
}

} // namespace tb
