#include "actors/link/link_out.hpp"

#include <algorithm>

#include "log/log.hpp"

namespace tb {

namespace {

// Sends batches while the window has room and messages wait.
void link_out_pump(link_out_pointer self) {
  auto& st = self->state;
  while (!st.waiting.empty() &&
         st.next_seq - 1 - st.acked < st.bounds.window_batches) {
    link_frame frame;
    frame.seq = st.next_seq++;
    std::size_t bytes = 0;
    while (!st.waiting.empty() &&
           frame.messages.size() < st.bounds.batch_messages &&
           (frame.messages.empty() ||
            bytes + link_bytes(st.waiting.front()) <= st.bounds.batch_bytes)) {
      auto size = link_bytes(st.waiting.front());
      bytes += size;
      st.stats.buffered_bytes -= size;
      frame.messages.push_back(std::move(st.waiting.front()));
      st.waiting.pop_front();
    }
    st.stats.buffered_messages = st.waiting.size();
    st.stats.messages_sent += frame.messages.size();
    ++st.stats.batches_sent;
    st.unacked.emplace_back(frame.seq, frame.messages.size());
    self->send(st.inbound, link_atom_v, std::move(frame));
  }
  st.stats.in_flight_batches = st.next_seq - 1 - st.acked;
}

// Takes one publish frame's messages, dropping the oldest waiting ones
// past the buffer's bound.
void link_out_take(link_out_pointer self, std::vector<message_ref>& msgs) {
  auto& st = self->state;
  for (auto& msg : msgs) {
    st.stats.buffered_bytes += link_bytes(msg);
    st.waiting.push_back(std::move(msg));
  }
  // The window sends what it can first: only messages beyond it wait.
  link_out_pump(self);
  uint64_t dropped = 0;
  while (st.stats.buffered_bytes > st.bounds.buffer_bytes &&
         !st.waiting.empty()) {
    st.stats.buffered_bytes -= link_bytes(st.waiting.front());
    st.waiting.pop_front();
    ++dropped;
  }
  st.stats.buffered_messages = st.waiting.size();
  if (dropped == 0)
    return;
  st.stats.dropped += dropped;
  st.episode_drops += dropped;
  if (!st.dropping) {
    st.dropping = true;
    log::warn("link buffer full: dropping the oldest messages for a peer",
              {{"peer", st.peer},
               {"buffer_bytes", st.bounds.buffer_bytes},
               {"window_batches", st.bounds.window_batches}});
  }
}

// Returns the messages the peer will never get (waiting, or sent and not
// acknowledged) and forgets them: the peer went down.
uint64_t link_out_lost(link_out_pointer self) {
  auto& st = self->state;
  uint64_t lost = st.waiting.size();
  for (auto& batch : st.unacked)
    lost += batch.second;
  st.waiting.clear();
  st.unacked.clear();
  st.stats.buffered_messages = 0;
  st.stats.buffered_bytes = 0;
  st.acked = st.next_seq - 1; // nothing in flight any more
  st.stats.in_flight_batches = 0;
  if (lost > 0)
    log::warn("link to a peer that went down: messages lost",
              {{"peer", st.peer}, {"lost", lost}});
  return lost;
}

} // namespace

std::size_t link_bytes(const message_ref& msg) noexcept {
  return msg->size_bytes() + msg->topic().size() + link_message_overhead;
}

link_out_actor::behavior_type link_out_impl(link_out_pointer self,
                                            std::string peer,
                                            link_in_actor inbound,
                                            link_settings bounds) {
  auto& st = self->state;
  st.peer = std::move(peer);
  st.inbound = std::move(inbound);
  st.bounds = bounds;
  st.bounds.window_batches = std::max<std::size_t>(bounds.window_batches, 1);
  st.bounds.batch_messages = std::max<std::size_t>(bounds.batch_messages, 1);
  return {
      [self](link_atom, std::vector<message_ref>& msgs) {
        link_out_take(self, msgs);
      },
      [self](link_ack_atom, uint64_t seq) {
        auto& st = self->state;
        if (seq <= st.acked || seq >= st.next_seq)
          return; // stale or bogus
        st.acked = seq;
        while (!st.unacked.empty() && st.unacked.front().first <= seq)
          st.unacked.pop_front();
        link_out_pump(self);
        if (st.dropping && st.waiting.empty()) {
          st.dropping = false;
          log::warn("link caught up: messages for a peer were dropped",
                    {{"peer", st.peer}, {"dropped", st.episode_drops}});
          st.episode_drops = 0;
        }
      },
      [self](stats_atom) { return self->state.stats; },
      [self](peer_down_atom) { return link_out_lost(self); },
  };
}

} // namespace tb
