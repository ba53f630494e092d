#include "actors/session/session_actor.hpp"

#include <chrono>
#include <string_view>

#include <caf/send.hpp>

#include "actors/session/unary_call.hpp"
#include "routing/pattern.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// Refuses a publish of more messages than `max_publish_batch`.
error_info check_batch_size(const session_state& st, int size,
                            const char* what) {
  auto limit = st.ctx.limits.max_publish_batch;
  if (static_cast<size_t>(size) <= limit)
    return {};
  return make_error_info(ec::limit_exceeded, std::string{what} + " holds " +
                                                 std::to_string(size) +
                                                 " messages; the limit is " +
                                                 std::to_string(limit));
}

// Handles one client frame; publish frames are released when routed.
void handle_frame(session_pointer self, const client_frame_ptr& frame) {
  auto& st = self->state;
  auto request_id = frame->request_id();
  switch (frame->kind_case()) {
  case pb::ClientFrame::kSubscribe:
    subscribe(self, request_id, frame->subscribe());
    break;
  case pb::ClientFrame::kSubscribeBatch:
    subscribe_batch(self, request_id, frame->subscribe_batch());
    break;
  case pb::ClientFrame::kUnsubscribe:
    unsubscribe(self, request_id, frame->unsubscribe());
    break;
  case pb::ClientFrame::kPublish: {
    auto& msgs = *frame->mutable_publish()->mutable_messages();
    if (auto err = check_batch_size(st, msgs.size(), "publish frame")) {
      queue_error(self, request_id, "publish", 0, err);
      break;
    }
    auto job =
        make_publish_job(st, msgs, frame->publish().msg_id_base(), st.grant);
    job->request_id = request_id;
    job->confirm = frame->publish().confirm();
    run_publish(self, std::move(job));
    return; // released once routed
  }
  case pb::ClientFrame::kRequest:
    start_request(self, request_id, *frame->mutable_request());
    break;
  case pb::ClientFrame::kReply:
    send_reply(self, request_id, *frame->mutable_reply());
    break;
  case pb::ClientFrame::kAck:
  case pb::ClientFrame::kNack:
  case pb::ClientFrame::kInProgress:
    answer_deliveries(self, *frame);
    break;
  case pb::ClientFrame::KIND_NOT_SET:
    queue_error(self, request_id, "unknown", 0,
                make_error_info(ec::invalid_request,
                                "the frame holds no request this broker "
                                "knows"));
    break;
  }
  release_frame(self);
  flush(self);
}

// Evicts routes not used since the last sweep and tells their topics.
void sweep_routes(session_pointer self) {
  auto& st = self->state;
  for (auto& topic : st.routes.sweep())
    self->send(st.ctx.router, detach_atom_v, topic,
               caf::actor_cast<session_actor>(self));
  st.sweep_scheduled = st.routes.size() > 0;
  if (st.sweep_scheduled)
    self->delayed_send(self, st.ctx.route_idle_timeout, tick_atom_v);
}

} // namespace

session_stats session_state::current_stats() const {
  auto result = stats;
  result.cached_routes = routes.size();
  result.buffered =
      deliveries.buffered() + group_outbox.size() + requests.outbox.size();
  result.requests.pending = requests.pending_count();
  result.dropped = deliveries.dropped_total();
  result.expired = deliveries.expired_total();
  result.buffered_bytes = deliveries.buffered_bytes();
  result.peer = peer;
  result.token = grant.token;
  result.client_name = client_name;
  result.connected_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - started)
          .count());
  return result;
}

session_state::~session_state() {
  // CAF destroys the state when the actor terminates, on every path (the
  // client closed, the stream broke, the broker stops): the one place to
  // hand the final counts to the router, so broker totals keep them.
  if (sink && ctx.router)
    caf::anon_send(ctx.router, retire_atom_v, current_stats());
}

void queue_error(session_pointer self, uint64_t request_id, const char* request,
                 uint64_t subscription_id, const error_info& error) {
  if (!self->state.sink)
    return; // nobody to tell: the unary publishers answer in their reply
  auto frame = std::make_unique<pb::ServerFrame>();
  auto* out = frame->mutable_error();
  out->set_request_id(request_id);
  out->set_request(request);
  out->set_subscription_id(subscription_id);
  auto* err = out->mutable_error();
  err->set_code(grpc_status_code(error.code));
  err->set_reason(std::string{to_string(error.code)});
  err->set_message(error.text);
  self->state.control.push_back(std::move(frame));
  // Refused messages of a publish are counted one by one when it finishes.
  if (std::string_view{request} != "publish") {
    ++self->state.stats.refused;
    if (error.code == ec::permission_denied)
      ++self->state.stats.denied;
  }
  log_refusal(self, request, error);
}

void log_refusal(session_pointer self, std::string_view request,
                 const error_info& error, std::string_view peer) {
  if (auto wake =
          self->state.logs.refused(request, error, self->clock().now(), peer))
    self->delayed_send(self, *wake, log_tick_atom_v);
}

session_actor::behavior_type session_actor_impl(session_pointer self,
                                                broker_context ctx,
                                                frame_sink_ptr sink,
                                                access_grant grant) {
  auto& st = self->state;
  st.grant = std::move(grant);
  st.routes = route_cache{ctx.limits.max_routes_per_session};
  st.deliveries = delivery_buffer{ctx.limits.subscription_buffer,
                                  ctx.limits.max_session_buffered_bytes};
  st.ctx = std::move(ctx);
  st.sink = std::move(sink);
  st.started = std::chrono::steady_clock::now();
  if (st.sink) {
    st.peer = st.sink->peer();
    st.client_name = st.sink->client_name();
  }
  st.logs.set_peer(st.peer, st.client_name);
  if (st.sink)
    self->attach_functor([sink = st.sink](const caf::error&) {
      sink->finish(ec::shutting_down, "the session ended");
    });
  // The bridge sends the exit when the stream is gone (see on_exit).
  self->set_exit_handler(
      [self](caf::exit_msg& msg) { on_exit(self, std::move(msg.reason)); });
  // From the remote groups the session watches (group_watch.hpp).
  self->set_down_handler([self](caf::down_msg& msg) { group_down(self, msg); });
  return {
      [self](frame_atom, const client_frame_ptr& frame) {
        if (!self->state.closing)
          handle_frame(self, frame);
      },
      [self](writable_atom) { flush(self); },
      [self](closed_atom) {
        self->state.closing = true;
        flush(self);
      },
      [self](deliver_atom, const fanout_batch& batch) {
        auto& st = self->state;
        if (st.closing)
          return;
        for (auto& item : batch.items)
          st.deliveries.push(item.subscription_id, item.message);
        if (st.deliveries.has_new_losses())
          st.logs.lost(st.deliveries.take_new_losses(), self->clock().now());
        flush(self);
      },
      [self](route_atom, const route_list& routes) {
        for (auto& route : routes)
          self->state.routes.update(route);
        return caf::ok_atom_v;
      },
      [self](unary_atom, const unary_call_ptr& call) {
        auto& st = self->state;
        auto& msgs = *call->request->mutable_messages();
        if (auto err = check_batch_size(st, msgs.size(), "publish request")) {
          call->complete(err);
          return;
        }
        auto job = make_publish_job(st, msgs, call->request->msg_id_base(),
                                    call->grant);
        job->unary = call;
        run_publish(self, std::move(job));
      },
      [self](tick_atom) { sweep_routes(self); },
      [self](gdeliver_atom, group_delivery_batch& batch) {
        accept_group_deliveries(self, batch);
      },
      [self](expired_atom, const std::vector<uint64_t>& ids) {
        forget_deliveries(self->state, ids);
      },
      [self](kicked_atom, uint64_t subscription_id, const std::string& reason) {
        end_membership(self, subscription_id, reason);
      },
      [self](rejoin_atom, uint64_t subscription_id, uint64_t attempt) {
        try_rejoin(self, subscription_id, attempt);
      },
      [self](rejoin_atom, const caf::actor_addr& group) {
        rejoin_lost_memberships(self, group, "another owner replaced it");
      },
      [self](remote_atom, std::vector<message_ref>& msgs) {
        // Messages from a peer node's link (actors/link/link_in.hpp).
        auto job = std::make_shared<publish_job>();
        job->from_link = true;
        job->link_done = self->make_response_promise<caf::ok_atom>();
        auto promise = job->link_done;
        job->outcomes.resize(msgs.size());
        for (uint32_t i = 0; i < msgs.size(); ++i) {
          job->outcomes[i].id = msgs[i]->id();
          job->positions.push_back(i);
        }
        job->accepted = std::move(msgs);
        run_publish(self, std::move(job));
        return promise;
      },
      [self](dlq_atom, message_ref& msg) {
        // A dead letter from a group: publish it like a client message, but
        // to a broker-owned topic.
        auto job = std::make_shared<publish_job>();
        job->outcomes.resize(1);
        job->outcomes[0].id = msg->id();
        job->positions.push_back(0);
        job->accepted.push_back(std::move(msg));
        run_publish(self, std::move(job));
      },
      [self](log_tick_atom) {
        if (auto wake = self->state.logs.tick(self->clock().now()))
          self->delayed_send(self, *wake, log_tick_atom_v);
      },
      [self](auth_atom, access_grant& grant) {
        change_grant(self, std::move(grant));
      },
      [self](rdeliver_atom, request_delivery& delivery) {
        accept_request(self, delivery);
      },
      [self](reply_atom, uint64_t key, reply_body& body) {
        return take_reply(self, key, body);
      },
      [self](rtimeout_atom) { expire_requests(self); },
      [self](unary_req_atom, const unary_request_ptr& call) {
        start_request(self, 0, *call->request, call);
      },
      [self](stats_atom) {
        auto result = self->state.current_stats();
        result.mailbox = mailbox_length(self);
        return result;
      },
  };
}

} // namespace tb
