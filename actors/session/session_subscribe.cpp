// The subscription requests of a session: subscribe (fan-out; group joins
// continue in session_groups.cpp), unsubscribe, and the permission checks
// of both, including a reload that narrows the client's token.

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "actors/session/session_actor.hpp"
#include "routing/pattern.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace pb = tinybroker::v1;

namespace {

// Returns PERMISSION_DENIED if `grant` does not allow the subscription
// `req` asks for (its pattern, its group), else no error.
error_info check_permission(const access_grant& grant,
                            const pb::Subscribe& req) {
  if (!may_subscribe(grant, req.pattern()))
    return make_error_info(ec::permission_denied,
                           describe_client(grant) + " may not subscribe to \"" +
                               req.pattern() +
                               "\": its subscribe patterns do not cover every "
                               "topic it matches");
  if (!req.group().empty() && !may_join(grant, req.group()))
    return make_error_info(ec::permission_denied, describe_client(grant) +
                                                      " may not join group \"" +
                                                      req.group() + "\"");
  return {};
}

// Ends the fan-out subscription `id`, telling the client `reason` (empty
// when it asked); false if there is none.
bool end_fanout(session_pointer self, uint64_t id, const std::string& reason) {
  auto& st = self->state;
  if (!st.deliveries.remove(id))
    return false;
  --st.stats.subscriptions;
  st.patterns.erase(id);
  st.logs.unsubscribed(id, self->clock().now());
  self->send(st.ctx.router, unsub_atom_v, id,
             caf::actor_cast<session_actor>(self));
  auto frame = std::make_unique<pb::ServerFrame>();
  frame->mutable_unsubscribed()->set_subscription_id(id);
  frame->mutable_unsubscribed()->set_reason(reason);
  st.control.push_back(std::move(frame));
  return true;
}

// Checks a Subscribe entry against the session's limits and grant; no
// error if it may be made.
error_info admit(session_state& st, const pb::Subscribe& req) {
  auto id = req.subscription_id();
  if (auto err = validate_pattern(req.pattern(), st.ctx.names()))
    return err;
  if (subscription_count(st) >= st.ctx.limits.max_subscriptions_per_session)
    return make_error_info(ec::limit_exceeded,
                           "this session already has " +
                               std::to_string(subscription_count(st)) +
                               " subscriptions, the limit");
  if (st.deliveries.contains(id) || st.memberships.count(id) != 0)
    return make_error_info(ec::invalid_request,
                           "subscription id " + std::to_string(id) +
                               " is already in use on this stream");
  return check_permission(st.grant, req);
}

// Makes the entries of one Subscribe or SubscribeBatch frame: refused ones
// get an error frame each, group entries join one by one, and the fan-out
// entries go to the router in one request.
template <class Entries>
void subscribe_entries(session_pointer self, subscribe_answer_ptr answer,
                       const Entries& entries) {
  auto& st = self->state;
  auto session = caf::actor_cast<session_actor>(self);
  fanout_subscriptions fanout;
  for (const pb::Subscribe& req : entries) {
    auto id = req.subscription_id();
    if (auto err = admit(st, req)) {
      queue_error(self, answer->request_id, "subscribe", id, err);
      continue;
    }
    // Only a reload can narrow a grant, and only with auth on.
    if (st.grant.enforced)
      st.patterns.emplace(id, req.pattern());
    if (!req.group().empty()) {
      join_group(self, answer, req);
      continue;
    }
    st.deliveries.add(id);
    st.logs.subscribed(id, req.pattern());
    ++st.stats.subscriptions;
    fanout.push_back(fanout_subscription{req.pattern(), {session, id}});
  }
  if (fanout.empty()) {
    ++answer->pending; // settled at once: a batch with no fan-out entry
    settle_subscription(self, *answer);
    return;
  }
  std::vector<uint64_t> ids;
  ids.reserve(fanout.size());
  for (auto& sub : fanout)
    ids.push_back(sub.target.subscription_id);
  ++answer->pending;
  self->request(st.ctx.router, caf::infinite, sub_atom_v, std::move(fanout))
      .then(
          [self, answer, ids](caf::ok_atom) {
            auto& st = self->state;
            for (auto id : ids) {
              if (!st.deliveries.contains(id))
                continue; // unsubscribed meanwhile
              confirm_subscription(self, *answer, id);
              st.deliveries.confirm(id);
            }
            settle_subscription(self, *answer);
            flush(self);
          },
          [self, answer, ids](caf::error& err) {
            auto& st = self->state;
            for (auto id : ids) {
              if (st.deliveries.remove(id))
                --st.stats.subscriptions;
              st.patterns.erase(id);
              st.logs.unsubscribed(id, self->clock().now());
              queue_error(self, answer->request_id, "subscribe", id,
                          make_error_info(ec::internal, "the router failed: " +
                                                            to_string(err)));
            }
            settle_subscription(self, *answer);
            flush(self);
          });
}

} // namespace

void subscribe(session_pointer self, uint64_t request_id,
               const pb::Subscribe& req) {
  auto answer = std::make_shared<subscribe_answer>();
  answer->request_id = request_id;
  subscribe_entries(self, std::move(answer), std::array{std::cref(req)});
}

void subscribe_batch(session_pointer self, uint64_t request_id,
                     const pb::SubscribeBatch& req) {
  auto& st = self->state;
  auto answer = std::make_shared<subscribe_answer>();
  answer->request_id = request_id;
  answer->batch = true;
  auto limit = st.ctx.limits.max_subscribe_batch;
  if (static_cast<size_t>(req.subscriptions_size()) > limit) {
    queue_error(self, request_id, "subscribe", 0,
                make_error_info(ec::limit_exceeded,
                                "subscribe batch holds " +
                                    std::to_string(req.subscriptions_size()) +
                                    " subscriptions; the limit "
                                    "(limits.max_subscribe_batch) is " +
                                    std::to_string(limit)));
    return;
  }
  subscribe_entries(self, std::move(answer), req.subscriptions());
}

void confirm_subscription(session_pointer self, subscribe_answer& answer,
                          uint64_t id) {
  if (answer.batch) {
    answer.ids.push_back(id);
    return;
  }
  auto frame = std::make_unique<pb::ServerFrame>();
  frame->mutable_subscribed()->set_subscription_id(id);
  frame->mutable_subscribed()->set_request_id(answer.request_id);
  self->state.control.push_back(std::move(frame));
}

void settle_subscription(session_pointer self, subscribe_answer& answer) {
  if (--answer.pending != 0 || !answer.batch)
    return;
  auto frame = std::make_unique<pb::ServerFrame>();
  auto* done = frame->mutable_subscribed_batch();
  done->set_request_id(answer.request_id);
  done->mutable_subscription_ids()->Add(answer.ids.begin(), answer.ids.end());
  self->state.control.push_back(std::move(frame));
}

void unsubscribe(session_pointer self, uint64_t request_id,
                 const pb::Unsubscribe& req) {
  auto id = req.subscription_id();
  if (leave_group(self, id) || end_fanout(self, id, ""))
    return;
  queue_error(self, request_id, "unsubscribe", id,
              make_error_info(ec::unknown_subscription,
                              "no subscription with id " + std::to_string(id) +
                                  " on this stream"));
}

void change_grant(session_pointer self, access_grant grant) {
  auto& st = self->state;
  st.grant = std::move(grant);
  std::vector<std::pair<uint64_t, error_info>> revoked;
  for (auto& [id, pattern] : st.patterns) {
    pb::Subscribe req;
    req.set_pattern(pattern);
    if (auto i = st.memberships.find(id); i != st.memberships.end())
      req.set_group(i->second.group);
    if (auto err = check_permission(st.grant, req))
      revoked.emplace_back(id, std::move(err));
  }
  for (auto& [id, err] : revoked) {
    auto reason = "permission_denied: " + err.text;
    if (!leave_group(self, id, reason))
      end_fanout(self, id, reason);
    log_refusal(self, "subscription", err);
  }
  flush(self);
}

} // namespace tb
