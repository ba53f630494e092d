// The subscription requests of a session: subscribe (fan-out; group joins
// continue in session_groups.cpp), unsubscribe, and the permission checks
// of both, including a reload that narrows the client's token.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "actors/routing/pattern.hpp"
#include "actors/session_actor.hpp"
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

} // namespace

void subscribe(session_pointer self, uint64_t request_id,
               const pb::Subscribe& req) {
  auto& st = self->state;
  auto id = req.subscription_id();
  if (auto err = validate_pattern(req.pattern(), st.ctx.names())) {
    queue_error(self, request_id, "subscribe", id, err);
    return;
  }
  if (subscription_count(st) >= st.ctx.limits.max_subscriptions_per_session) {
    queue_error(self, request_id, "subscribe", id,
                make_error_info(ec::limit_exceeded,
                                "this session already has " +
                                    std::to_string(subscription_count(st)) +
                                    " subscriptions, the limit"));
    return;
  }
  if (st.deliveries.contains(id) || st.memberships.count(id) != 0) {
    queue_error(self, request_id, "subscribe", id,
                make_error_info(ec::invalid_request,
                                "subscription id " + std::to_string(id) +
                                    " is already in use on this stream"));
    return;
  }
  if (auto err = check_permission(st.grant, req)) {
    queue_error(self, request_id, "subscribe", id, err);
    return;
  }
  // Only a reload can narrow a grant, and only with auth on.
  if (st.grant.enforced)
    st.patterns.emplace(id, req.pattern());
  if (!req.group().empty()) {
    join_group(self, request_id, req);
    return;
  }
  st.deliveries.add(id);
  st.logs.subscribed(id, req.pattern());
  ++st.stats.subscriptions;
  self->request(st.ctx.router, caf::infinite, sub_atom_v, req.pattern(), id,
                caf::actor_cast<session_actor>(self))
      .then(
          [self, id, request_id](caf::ok_atom) {
            auto& st = self->state;
            if (!st.deliveries.contains(id))
              return; // unsubscribed meanwhile
            auto frame = std::make_unique<pb::ServerFrame>();
            frame->mutable_subscribed()->set_subscription_id(id);
            frame->mutable_subscribed()->set_request_id(request_id);
            st.control.push_back(std::move(frame));
            st.deliveries.confirm(id);
            flush(self);
          },
          [self, id, request_id](caf::error& err) {
            auto& st = self->state;
            if (st.deliveries.remove(id))
              --st.stats.subscriptions;
            st.patterns.erase(id);
            st.logs.unsubscribed(id, self->clock().now());
            queue_error(self, request_id, "subscribe", id,
                        make_error_info(ec::internal, "the router failed: " +
                                                          to_string(err)));
            flush(self);
          });
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
