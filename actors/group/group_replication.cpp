// The owner's side of a group's replica (issue 32): the full state when a
// replica attaches, the stream of changes per handler run, publishes
// confirmed once the replica has them, and the start from a promoted
// replica's state (actors/group/group_replication.hpp).

#include <algorithm>
#include <utility>

#include "actors/group/group_actor.hpp"
#include "log/log.hpp"

namespace tb {

namespace {

// Held messages per rsnap chunk at most.
constexpr std::size_t replication_chunk_items = 1024;

// Sends the replica the group's full state: its held messages in key
// (acceptance) order, in chunks, the first resetting it.
void send_snapshot(group_pointer self) {
  auto& st = self->state;
  auto& repl = st.repl;
  std::vector<replica_item> all;
  all.reserve(st.ledger.held_messages());
  st.ledger.for_each_held([&](uint64_t key, const message_ref& msg,
                              uint32_t attempts, bool in_flight) {
    all.push_back(replica_item{key, msg, attempts, in_flight});
  });
  std::sort(all.begin(), all.end(),
            [](const replica_item& x, const replica_item& y) {
              return x.key < y.key;
            });
  std::size_t at = 0;
  do {
    replica_chunk chunk;
    chunk.seq = ++repl.seq;
    chunk.settings = st.settings;
    chunk.next_key = st.next_key;
    chunk.first = at == 0;
    auto end = std::min(all.size(), at + replication_chunk_items);
    chunk.items.reserve(end - at);
    for (; at < end; ++at)
      chunk.items.push_back(std::move(all[at]));
    chunk.last = at == all.size();
    self->send(repl.replica, rsnap_atom_v, std::move(chunk));
  } while (at < all.size());
  repl.synced_at = repl.seq;
}

// Sends one rchange of `kind` with `keys` (emptied), if any.
void send_change(group_pointer self, replica_change_kind kind,
                 std::vector<uint64_t>& keys) {
  if (keys.empty())
    return;
  auto& repl = self->state.repl;
  replica_change change{kind, std::move(keys)};
  keys.clear();
  self->send(repl.replica, rchange_atom_v, ++repl.seq, std::move(change));
}

// Forgets what the last handler run recorded for a replica.
void clear_round(group_replication& repl) {
  repl.batch.clear();
  repl.returned.clear();
  repl.removed.clear();
}

} // namespace

void attach_replica(group_pointer self, replica_actor replica, uint64_t term) {
  auto& st = self->state;
  auto& repl = st.repl;
  if (term < repl.term) {
    log::warn("group refused a replica of an older ownership term",
              {{"group", st.group}, {"term", term}, {"current", repl.term}});
    return;
  }
  repl.term = term;
  if (replica == repl.replica)
    return;
  if (repl.replica)
    self->demonitor(repl.replica.address());
  repl.replica = std::move(replica);
  clear_round(repl);
  if (!repl.replica) {
    refuse_waiting(self, "its replica was detached");
    return;
  }
  // Replies that waited for the old replica now wait for the new one: its
  // full state holds their messages, and its sequence numbers are higher.
  self->monitor(repl.replica);
  send_snapshot(self);
  for (auto& w : repl.waiting)
    w.seq = std::max(w.seq, repl.synced_at);
}

void replica_acked(group_pointer self, uint64_t seq) {
  auto& repl = self->state.repl;
  auto sender = self->current_sender();
  if (!repl.replica || sender == nullptr ||
      sender->address() != repl.replica.address())
    return;
  repl.acked_seq = std::max(repl.acked_seq, seq);
  while (!repl.waiting.empty() && repl.waiting.front().seq <= repl.acked_seq) {
    auto& w = repl.waiting.front();
    w.promise.deliver(std::move(w.reply));
    repl.waiting.pop_front();
  }
}

void refuse_waiting(group_pointer self, const std::string& why) {
  auto& st = self->state;
  auto& repl = st.repl;
  if (repl.waiting.empty())
    return;
  auto reason = "group \"" + st.group + "\": " + why +
                " before it acknowledged this batch; the owner holds it, "
                "but it was not copied to a second node, so it may or may "
                "not be delivered if the owner's node goes too (retry; with "
                "a msg_id a retry is not doubled)";
  for (auto& w : repl.waiting) {
    repl.refused_unacked += w.accepted;
    w.reply.refused.clear();
    for (uint32_t i = 0; i < w.size; ++i)
      w.reply.refused.push_back(i);
    w.reply.reason = reason;
    w.reply.code = ec::node_unavailable;
    w.promise.deliver(std::move(w.reply));
  }
  repl.waiting.clear();
}

void release_waiting(group_pointer self) {
  auto& repl = self->state.repl;
  for (auto& w : repl.waiting) {
    repl.confirmed_unreplicated += w.accepted;
    w.promise.deliver(std::move(w.reply));
  }
  repl.waiting.clear();
}

bool replica_down(group_pointer self, const caf::down_msg& msg) {
  auto& st = self->state;
  auto& repl = st.repl;
  if (!repl.replica || msg.source != repl.replica.address())
    return false;
  log::warn("group lost its replica: publishes waiting for it are refused "
            "(may or may not be taken), later ones confirmed without one",
            {{"group", st.group},
             {"reason", to_string(msg.reason)},
             {"waiting_batches", repl.waiting.size()},
             {"term", repl.term}});
  repl.replica = nullptr;
  clear_round(repl);
  refuse_waiting(self, msg.reason == caf::exit_reason::remote_link_unreachable
                           ? "its replica's node was lost"
                           : "its replica ended");
  return true;
}

void replicate_round(
    group_pointer self,
    const std::unordered_map<uint64_t, group_delivery_batch>& out) {
  auto& st = self->state;
  auto& repl = st.repl;
  if (!repl.batch.empty()) {
    repl.last_hold_seq = ++repl.seq;
    self->send(repl.replica, rhold_atom_v, repl.last_hold_seq,
               std::move(repl.batch));
    repl.batch.clear();
  }
  send_change(self, replica_change_kind::returned, repl.returned);
  send_change(self, replica_change_kind::removed, repl.removed);
  if (out.empty())
    return;
  std::vector<uint64_t> delivered;
  for (auto& [member, batch] : out)
    for (auto& d : batch.items)
      if (auto* f = st.ledger.find(d.delivery_id))
        delivered.push_back(f->message.key);
  send_change(self, replica_change_kind::delivered, delivered);
}

caf::result<enqueue_reply> confirm_enqueue(group_pointer self,
                                           enqueue_reply reply, std::size_t n) {
  auto& st = self->state;
  auto accepted = n - std::min(n, reply.refused.size());
  if (!st.repl.replica) {
    if (st.settings.replicas > 0)
      st.repl.confirmed_unreplicated += accepted;
    return reply;
  }
  if (accepted == 0 || st.repl.acked_seq >= st.repl.last_hold_seq)
    return reply;
  auto promise = self->make_response_promise<enqueue_reply>();
  st.repl.waiting.push_back(group_replication::waiting_reply{
      st.repl.last_hold_seq, accepted, static_cast<uint32_t>(n),
      std::move(reply), promise});
  return promise;
}

void start_from_seed(group_pointer self) {
  auto& st = self->state;
  if (!st.ctx.seed)
    return;
  auto& seed = *st.ctx.seed;
  std::vector<group_ledger::held> again;
  uint64_t max_key = 0;
  for (auto& item : seed.items) {
    if (!item.message)
      continue;
    max_key = std::max(max_key, item.key);
    ++st.counters.received;
    if (item.in_flight)
      again.emplace_back(item.message, item.attempts, item.key);
    else
      hold_new(self, item.message, item.key, item.attempts);
  }
  // The first in flight first in line, each at the head of its level.
  for (auto i = again.rbegin(); i != again.rend(); ++i)
    st.ledger.push_front(std::move(*i));
  st.next_key = std::max(seed.next_key, max_key + 1);
  if (!seed.items.empty())
    log::info("group started from its replica's state",
              {{"group", st.group},
               {"held", seed.items.size()},
               {"in_flight_again", again.size()},
               {"next_key", st.next_key}});
  schedule_wake(self);
}

} // namespace tb
