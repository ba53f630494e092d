#include "actors/link/link_in.hpp"

#include "actors/session/session_actor.hpp"
#include "tinybroker.pb.h"

namespace tb {

link_in_actor::behavior_type
link_in_impl(link_in_pointer self, std::string peer, broker_context ctx) {
  auto& st = self->state;
  st.peer = std::move(peer);
  // Linked: the delivery session stops with its link.
  st.delivery = self->spawn<caf::linked>(session_actor_impl, std::move(ctx),
                                         frame_sink_ptr{}, access_grant{});
  return {
      [self](link_atom, link_frame& frame) {
        auto& st = self->state;
        ++st.stats.batches_received;
        st.stats.messages_received += frame.messages.size();
        auto sender = caf::actor_cast<link_out_actor>(self->current_sender());
        auto ack = [self, sender, seq = frame.seq] {
          if (sender)
            self->send(sender, link_ack_atom_v, seq);
        };
        self->request(st.delivery, caf::infinite, remote_atom_v,
                      std::move(frame.messages))
            .then([ack](caf::ok_atom) { ack(); },
                  // A failed delivery session is gone with its messages;
                  // ack anyway, so the peer's window does not stall.
                  [ack](caf::error&) { ack(); });
      },
      [self](stats_atom) { return self->state.stats; },
  };
}

} // namespace tb
