// The caller's side of request/reply in a session actor (docs/semantics.md,
// "Request and reply"; the responder's side is in session_replies.cpp).
//
// A Request is checked like a published message (topic, size,
// publish rights), given a message id (its key here), and sent to the
// topic's fan-out subscribers (each gets it; the first reply wins) or, with
// a group, held by that group as one delivery. Nobody to send it to: the
// caller gets NO_RESPONDERS at once. Its timeout is one entry in the
// session's deadline set (request_book), woken by a delayed rtimeout_atom.

#include <chrono>
#include <string>

#include "actors/session/session_actor.hpp"
#include "actors/session/session_quorum.hpp"
#include "actors/session/unary_call.hpp"
#include "routing/topic.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// A request without a timeout waits this long.
constexpr uint32_t default_timeout_ms = 5000;

// The longest timeout a request may ask for.
constexpr uint32_t max_timeout_ms = 600'000;

// Refuses a request: an error frame naming it, or the unary call's status.
void fail(session_pointer self, uint64_t request_id,
          const unary_request_ptr& unary, const error_info& err) {
  auto& st = self->state;
  if (err.code == ec::no_responders)
    ++st.stats.requests.no_responders;
  if (unary) {
    ++st.stats.refused;
    if (err.code == ec::permission_denied)
      ++st.stats.denied;
    log_refusal(self, "Request", err, unary->peer);
    unary->complete(err);
    return;
  }
  queue_error(self, request_id, "request", 0, err);
  flush(self);
}

// Records the request `key` as waiting, until `timeout` from now.
void wait_for_reply(session_pointer self, uint64_t key, uint64_t request_id,
                    const unary_request_ptr& unary,
                    std::chrono::milliseconds timeout) {
  auto& st = self->state;
  st.requests.add_pending(key, request_id, unary,
                          self->clock().now() + timeout);
  ++st.stats.requests.requests;
  schedule_request_wake(self);
}

// A request that found nobody: it no longer waits.
void no_responders(session_pointer self, uint64_t key, const error_info& err) {
  if (auto p = self->state.requests.take_pending(key)) {
    --self->state.stats.requests.requests; // counted as no-responders instead
    fail(self, p->request_id, p->unary, err);
  }
}

// Sends the request to every fan-out subscription of `route`.
void send_to_subscribers(session_pointer self, const route_ref* route,
                         const message_ref& msg, const reply_target& target,
                         const error_info& lookup_error) {
  auto key = target.request;
  if (route == nullptr) {
    no_responders(self, key,
                  lookup_error ? lookup_error
                               : make_error_info(ec::internal,
                                                 "no route for topic \"" +
                                                     std::string{msg->topic()} +
                                                     "\" (the router failed)"));
    return;
  }
  if ((*route)->fanout.empty()) {
    no_responders(
        self, key,
        make_error_info(ec::no_responders, "nobody subscribes to \"" +
                                               std::string{msg->topic()} +
                                               "\" to answer the request"));
    return;
  }
  ++self->state.stats.published;
  for (auto& dest : (*route)->fanout)
    self->send(dest.session, rdeliver_atom_v,
               request_delivery{msg, dest.subscription_id, target});
}

// Hands the request to the group `name`, which holds it as one delivery.
void send_to_group(session_pointer self, const std::string& name,
                   message_ref msg, reply_target target) {
  auto& st = self->state;
  auto key = target.request;
  auto topic = std::string{msg->topic()};
  self->request(st.ctx.router, caf::infinite, find_atom_v, name, topic)
      .await(
          [self, key, msg, target, name](group_actor group) {
            // The request is in the group's mailbox once sent: its answer
            // need not hold back the client's later frames. A remote group
            // is watched: if its node is lost first, the request fails at
            // the down message (the reply never comes), and the bounded
            // timeout ends the handler.
            uint64_t token = 0;
            if (watch_group(self, group, name))
              token = self->state.watch.wait(
                  group.address(), [self, key](const error_info& err) {
                    no_responders(self, key, err);
                  });
            self->request(group, group_reply_timeout(self, group),
                          request_atom_v, msg, target)
                .then(
                    [self, group, token](caf::ok_atom) {
                      if (end_group_wait(self, group, token))
                        ++self->state.stats.published;
                    },
                    [self, group, token, key](caf::error& err) {
                      if (!end_group_wait(self, group, token))
                        return;
                      no_responders(
                          self, key,
                          err == caf::sec::request_timeout
                              ? group_no_reply_error(group_name_of(self, group))
                              : to_error_info(err));
                    });
          },
          [self, key](caf::error& err) {
            no_responders(self, key, to_error_info(err));
          });
}

// Writes `res` to the caller: a Response frame, or the unary call's reply.
void deliver_reply(session_pointer self, request_book::pending& p, uint64_t key,
                   reply_body& body) {
  auto fill = [&](pb::Response& out) {
    out.set_request_id(p.request_id);
    out.set_message_id(key);
    out.set_payload(std::move(body.payload));
    auto& headers = *out.mutable_headers();
    for (auto& [name, value] : body.headers)
      headers[name] = value;
  };
  if (p.unary) {
    fill(*p.unary->response);
    p.unary->complete(error_info{});
    return;
  }
  auto frame = std::make_unique<pb::ServerFrame>();
  fill(*frame->mutable_response());
  self->state.control.push_back(std::move(frame));
  flush(self);
}

} // namespace

void schedule_request_wake(session_pointer self) {
  auto& book = self->state.requests;
  auto due = book.next_due();
  if (!due || (book.wake && *book.wake <= *due))
    return;
  book.wake = *due;
  auto now = self->clock().now();
  auto delay = *due > now ? *due - now : caf::timespan{0};
  self->delayed_send(self, delay, rtimeout_atom_v);
}

void start_request(session_pointer self, uint64_t request_id, pb::Request& req,
                   unary_request_ptr unary) {
  auto& st = self->state;
  auto timeout_ms =
      req.timeout_ms() == 0 ? default_timeout_ms : req.timeout_ms();
  if (timeout_ms > max_timeout_ms) {
    fail(self, request_id, unary,
         make_error_info(ec::invalid_request,
                         "timeout_ms " + std::to_string(timeout_ms) +
                             " is over the longest request timeout, " +
                             std::to_string(max_timeout_ms) + " ms"));
    return;
  }
  if (!req.group().empty()) {
    auto err = validate_group_name(req.group());
    if (!err) // the majority rule (cluster)
      err = quorum_refusal(st, "group \"" + req.group() +
                                   "\" refuses requests until this node "
                                   "sees a majority");
    if (err) {
      fail(self, request_id, unary, err);
      return;
    }
  }
  auto limit = st.ctx.limits.max_pending_requests_per_session;
  if (st.requests.pending_count() >= limit) {
    fail(self, request_id, unary,
         make_error_info(ec::limit_exceeded,
                         "this session already waits for " +
                             std::to_string(st.requests.pending_count()) +
                             " replies; "
                             "limits.max_pending_requests_per_session = " +
                             std::to_string(limit)));
    return;
  }
  // Checked, given an id and made as a published message would be.
  google::protobuf::RepeatedPtrField<pb::Message> one;
  one.Add()->Swap(req.mutable_message());
  auto job = make_publish_job(st, one, {}, unary ? unary->grant : st.grant);
  if (auto& err = job->outcomes[0].error) {
    fail(self, request_id, unary, err);
    return;
  }
  auto msg = job->accepted[0];
  auto key = msg->id();
  auto timeout = std::chrono::milliseconds{timeout_ms};
  reply_target target{caf::actor_cast<caf::actor>(self), key,
                      now_unix_nanos() +
                          std::chrono::nanoseconds{timeout}.count()};
  // Waiting before it leaves: its reply cannot overtake the bookkeeping.
  wait_for_reply(self, key, request_id, unary, timeout);
  if (!req.group().empty()) {
    send_to_group(self, req.group(), std::move(msg), std::move(target));
    return;
  }
  auto topic = std::string{msg->topic()};
  if (auto* cached = st.routes.find(topic)) {
    send_to_subscribers(self, cached, msg, target, {});
    return;
  }
  // As a publish does: the lookup holds back the client's later frames.
  self->request(st.ctx.router, caf::infinite, resolve_atom_v,
                std::vector<std::string>{topic}, self_handle(self))
      .await(
          [self, msg, target, topic](route_list& routes) {
            auto& st = self->state;
            if (routes.empty() || !routes[0].ptr) {
              send_to_subscribers(
                  self, nullptr, msg, target,
                  make_error_info(ec::limit_exceeded,
                                  "topic \"" + topic +
                                      "\" would be one more than "
                                      "limits.max_topics = " +
                                      std::to_string(st.ctx.limits.max_topics) +
                                      " live topics"));
              return;
            }
            cache_route(self, routes[0]);
            send_to_subscribers(self, &routes[0], msg, target, {});
          },
          [self, msg, target](caf::error& err) {
            send_to_subscribers(self, nullptr, msg, target, to_error_info(err));
          });
}

bool take_reply(session_pointer self, uint64_t key, reply_body& body) {
  auto& st = self->state;
  auto p = st.requests.take_pending(key);
  if (!p)
    return false;
  ++st.stats.requests.replies;
  deliver_reply(self, *p, key, body);
  return true;
}

void expire_requests(session_pointer self) {
  auto& st = self->state;
  st.requests.wake.reset();
  for (auto& p : st.requests.expire(self->clock().now())) {
    ++st.stats.requests.timeouts;
    auto err = make_error_info(ec::request_timeout,
                               "no reply within the request's timeout");
    if (p.unary) {
      p.unary->complete(err);
      continue;
    }
    queue_error(self, p.request_id, "request", 0, err);
  }
  schedule_request_wake(self);
  flush(self);
}

} // namespace tb
