// The responder's side of request/reply in a session actor (docs/
// semantics.md, "Request and reply"; the caller's side is in
// session_requests.cpp).
//
// A received request gets a reply handle, valid on this
// session only; a Reply naming it goes to the caller's session alone. The
// caller answers whether it still waited; a reply that came too late (the
// first reply won, the timeout passed, or the caller is gone) is counted
// here as a late reply and dropped.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "actors/session/group_watch.hpp"
#include "actors/session/session_actor.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// How long a responder keeps a received request answerable past its
// deadline, so that a reply racing the caller's timeout is still counted.
constexpr std::chrono::seconds open_slack{1};

} // namespace

void send_reply(session_pointer self, uint64_t request_id, pb::Reply& reply) {
  auto& st = self->state;
  auto size = reply.payload().size();
  for (auto& [name, value] : reply.headers())
    size += name.size() + value.size();
  if (size > st.ctx.limits.max_message_bytes) {
    queue_error(
        self, request_id, "reply", 0,
        make_error_info(ec::message_too_large,
                        "reply has " + std::to_string(size) +
                            " bytes; the limit is " +
                            std::to_string(st.ctx.limits.max_message_bytes)));
    return;
  }
  auto open = st.requests.take_open(reply.reply_handle());
  if (!open) {
    queue_error(self, request_id, "reply", 0,
                make_error_info(ec::unknown_request,
                                "reply_handle " +
                                    std::to_string(reply.reply_handle()) +
                                    " names no request this session received "
                                    "and has not answered (or it passed its "
                                    "deadline)"));
    return;
  }
  if (open->group) {
    // The reply acks the group delivery that carried the request.
    st.delivery_owners.erase(open->delivery_id);
    self->send(open->group, ack_atom_v, self_handle(self),
               std::vector<uint64_t>{open->delivery_id});
  }
  reply_body body;
  body.payload = std::move(*reply.mutable_payload());
  for (auto& [name, value] : reply.headers())
    body.headers.emplace_back(name, value);
  auto caller = caf::actor_cast<session_actor>(open->reply.caller);
  // Bounded: the caller may be a session on another node, whose loss would
  // leave an infinite request waiting forever (CAF 0.17).
  auto timeout = caller.node() != self->node()
                     ? caf::duration{group_watch::reply_timeout}
                     : caf::duration{caf::infinite};
  self->request(caller, timeout, reply_atom_v, open->reply.request,
                std::move(body))
      .then(
          [self](bool delivered) {
            if (!delivered)
              ++self->state.stats.requests.late_replies;
          },
          [self](caf::error&) {
            // The caller's session ended: its requests were dropped.
            ++self->state.stats.requests.late_replies;
          });
}

void accept_request(session_pointer self, request_delivery& delivery) {
  auto& st = self->state;
  if (st.closing || !st.deliveries.contains(delivery.subscription_id))
    return; // unsubscribed meanwhile: as a fan-out message, it is gone
  if (st.requests.open_count() >=
      st.ctx.limits.max_pending_requests_per_session) {
    // The client does not answer what it holds: at most once, as fan-out.
    ++st.stats.dropped;
    return;
  }
  auto handle = st.requests.next_handle();
  auto remaining = std::chrono::nanoseconds{delivery.reply.deadline_unix_nanos -
                                            now_unix_nanos()};
  auto expires = self->clock().now() +
                 std::max(remaining, std::chrono::nanoseconds{0}) + open_slack;
  auto deadline = delivery.reply.deadline_unix_nanos;
  st.requests.add_open(handle, std::move(delivery.reply), {}, 0, expires);
  st.requests.outbox.push_back(request_book::outgoing{
      std::move(delivery.message), delivery.subscription_id, handle, deadline});
  schedule_request_wake(self);
  flush(self);
}

void open_group_request(session_pointer self, const group_delivery& item,
                        const group_actor& group) {
  auto& st = self->state;
  auto remaining = std::chrono::nanoseconds{item.reply.deadline_unix_nanos -
                                            now_unix_nanos()};
  auto expires = self->clock().now() +
                 std::max(remaining, std::chrono::nanoseconds{0}) + open_slack;
  // A redelivery of the same request replaces nothing: its delivery id,
  // hence its handle, is new.
  st.requests.add_open(item.delivery_id, item.reply, group, item.delivery_id,
                       expires);
  schedule_request_wake(self);
}

bool requests_ready(const session_state& st) {
  for (auto& item : st.requests.outbox)
    if (!st.deliveries.contains(item.subscription_id) ||
        st.deliveries.confirmed(item.subscription_id))
      return true; // written, or dropped, by the next drain
  return false;
}

size_t drain_requests(session_state& st, pb::ServerFrame& frame, size_t max) {
  if (st.requests.outbox.empty())
    return 0;
  // As plain deliveries (delivery_buffer): a request for a subscription
  // whose Subscribed frame is not queued yet waits, in order, behind it;
  // one for a subscription ended meanwhile is gone, as fan-out is.
  auto* out = frame.mutable_deliveries()->mutable_deliveries();
  size_t moved = 0;
  ring_queue<request_book::outgoing> held;
  while (!st.requests.outbox.empty() && moved < max) {
    auto& item = st.requests.outbox.front();
    auto id = item.subscription_id;
    if (!st.deliveries.contains(id)) {
      st.requests.outbox.pop_front();
      continue;
    }
    if (!st.deliveries.confirmed(id)) {
      held.push_back(std::move(item));
      st.requests.outbox.pop_front();
      continue;
    }
    auto* d = out->Add();
    to_delivery(*item.message, id, *d);
    d->set_reply_handle(item.handle);
    d->set_reply_deadline_unix_nanos(item.deadline_unix_nanos);
    st.requests.outbox.pop_front();
    ++moved;
  }
  if (!held.empty()) {
    while (!st.requests.outbox.empty()) {
      held.push_back(std::move(st.requests.outbox.front()));
      st.requests.outbox.pop_front();
    }
    st.requests.outbox = std::move(held);
  }
  return moved;
}

} // namespace tb
