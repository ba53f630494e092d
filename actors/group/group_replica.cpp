// The replica actor (issue 32): applies its owner's stream in order,
// answers `rack`, never delivers, and hands its state over on `promote`.

#include "actors/group/group_replica.hpp"

#include <algorithm>
#include <utility>

#include <caf/exit_reason.hpp>

#include "log/log.hpp"

namespace tb {

// -- replica_book -------------------------------------------------------------

void replica_book::clear() {
  items_.clear();
  live_ = 0;
  bytes_ = 0;
}

bool replica_book::add(replica_item item) {
  if (!item.message || (!items_.empty() && item.key <= items_.back().key))
    return false;
  bytes_ += item.message->size_bytes();
  ++live_;
  items_.push_back(std::move(item));
  return true;
}

replica_item* replica_book::find(uint64_t key) {
  auto i = std::lower_bound(
      items_.begin(), items_.end(), key,
      [](const replica_item& x, uint64_t k) { return x.key < k; });
  if (i == items_.end() || i->key != key || !i->message)
    return nullptr;
  return &*i;
}

bool replica_book::remove(uint64_t key) {
  auto* item = find(key);
  if (item == nullptr)
    return false;
  bytes_ -= item->message->size_bytes();
  item->message = message_ref{};
  --live_;
  // Holes at the front go at once (the usual case: the oldest is acked
  // first); others wait for a compaction.
  while (!items_.empty() && !items_.front().message)
    items_.pop_front();
  if (items_.size() - live_ > std::max(live_, compact_floor))
    compact();
  return true;
}

void replica_book::compact() {
  std::deque<replica_item> kept;
  for (auto& item : items_)
    if (item.message)
      kept.push_back(std::move(item));
  items_.swap(kept);
}

std::vector<replica_item> replica_book::items() const {
  std::vector<replica_item> result;
  result.reserve(live_);
  for (auto& item : items_)
    if (item.message)
      result.push_back(item);
  return result;
}

// -- the actor ----------------------------------------------------------------

namespace {

// Returns true if the stream message `seq` (`what`) from the current sender
// may be applied: the owner attached, it comes from the owner, and it is the
// next in sequence. Logs what it refuses (its first refusals, then at
// powers of two).
bool replica_accepts(replica_pointer self, uint64_t seq, const char* what) {
  auto& st = self->state;
  const char* why = nullptr;
  if (!st.attached)
    why = "before the owner's first snapshot";
  else if (self->current_sender() == nullptr ||
           self->current_sender()->address() != st.owner)
    why = "not from the owner";
  else if (seq != st.applied_seq + 1)
    why = "out of sequence";
  if (why == nullptr)
    return true;
  auto n = ++st.ignored;
  if ((n & (n - 1)) == 0)
    log::warn("replica ignored a message of its owner's stream",
              {{"group", st.group},
               {"owner", st.owner_node},
               {"message", what},
               {"why", why},
               {"seq", seq},
               {"applied_seq", st.applied_seq},
               {"ignored", n}});
  return false;
}

// Answers the owner that everything up to `applied_seq` is applied.
void replica_ack(replica_pointer self) {
  auto& st = self->state;
  auto owner = caf::actor_cast<group_actor>(st.owner);
  if (owner)
    self->send(owner, rack_atom_v, st.applied_seq);
}

// Starts over from the first chunk of the owner's full state.
void replica_reset(replica_pointer self, const replica_chunk& chunk) {
  auto& st = self->state;
  auto sender = self->current_sender();
  if (sender == nullptr)
    return;
  if (sender->address() != st.owner) {
    if (auto old = caf::actor_cast<caf::actor>(st.owner))
      self->demonitor(old);
    st.owner = sender->address();
    self->monitor(caf::actor_cast<caf::actor>(sender));
  }
  st.book.clear();
  st.attached = true;
  st.synced = false;
  st.applied_seq = chunk.seq - 1;
}

void replica_apply_chunk(replica_pointer self, replica_chunk& chunk) {
  auto& st = self->state;
  if (chunk.first)
    replica_reset(self, chunk);
  if (!replica_accepts(self, chunk.seq, "rsnap"))
    return;
  st.applied_seq = chunk.seq;
  st.settings = std::move(chunk.settings);
  st.next_key = chunk.next_key;
  for (auto& item : chunk.items)
    st.book.add(std::move(item));
  if (chunk.last) {
    st.synced = true;
    replica_ack(self);
  }
}

void replica_apply_hold(replica_pointer self, uint64_t seq,
                        std::vector<message_ref>& msgs) {
  auto& st = self->state;
  if (!replica_accepts(self, seq, "rhold"))
    return;
  st.applied_seq = seq;
  for (auto& msg : msgs)
    st.book.add(replica_item{st.next_key++, std::move(msg), 0, false});
  replica_ack(self);
}

void replica_apply_change(replica_pointer self, uint64_t seq,
                          const replica_change& change) {
  auto& st = self->state;
  if (!replica_accepts(self, seq, "rchange"))
    return;
  st.applied_seq = seq;
  for (auto key : change.keys) {
    if (change.kind == replica_change_kind::removed) {
      st.book.remove(key);
      continue;
    }
    auto* item = st.book.find(key);
    if (item == nullptr)
      continue;
    if (change.kind == replica_change_kind::delivered) {
      ++item->attempts;
      item->in_flight = true;
    } else {
      item->in_flight = false;
    }
  }
}

} // namespace

replica_actor::behavior_type replica_actor_impl(replica_pointer self,
                                                std::string group,
                                                std::string owner_node) {
  auto& st = self->state;
  st.group = std::move(group);
  st.owner_node = std::move(owner_node);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (msg.source != st.owner)
      return;
    if (msg.reason == caf::exit_reason::normal) {
      // The group was deleted: nothing to keep.
      self->quit();
      return;
    }
    log::warn("replica lost its owner, waiting to be promoted",
              {{"group", st.group},
               {"owner", st.owner_node},
               {"reason", to_string(msg.reason)},
               {"held", st.book.size()},
               {"synced", st.synced}});
  });
  return {
      [self](rsnap_atom, replica_chunk& chunk) {
        replica_apply_chunk(self, chunk);
      },
      [self](rhold_atom, uint64_t seq, std::vector<message_ref>& msgs) {
        replica_apply_hold(self, seq, msgs);
      },
      [self](rchange_atom, uint64_t seq, const replica_change& change) {
        replica_apply_change(self, seq, change);
      },
      [self](rsettings_atom, uint64_t seq, group_settings& settings) {
        if (!replica_accepts(self, seq, "rsettings"))
          return;
        self->state.applied_seq = seq;
        self->state.settings = std::move(settings);
      },
      [self](promote_atom) {
        auto& st = self->state;
        group_seed seed;
        seed.settings = st.settings;
        seed.items = st.book.items();
        seed.next_key = st.next_key;
        log::info("replica promoted, handing its state over",
                  {{"group", st.group},
                   {"owner", st.owner_node},
                   {"held", seed.items.size()},
                   {"synced", st.synced}});
        self->quit();
        return seed;
      },
      [self](stats_atom) {
        auto& st = self->state;
        return replica_stats{st.group,        st.owner_node,  st.book.size(),
                             st.book.bytes(), st.applied_seq, st.synced};
      },
  };
}

} // namespace tb
