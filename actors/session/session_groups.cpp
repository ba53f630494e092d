// The consumer-group side of a session actor: joining and leaving groups,
// taking their deliveries, and forwarding the client's answers.

#include <algorithm>
#include <cctype>

#include "actors/session/session_actor.hpp"
#include "actors/session/session_quorum.hpp"
#include "routing/topic.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// A member that asks for no particular prefetch gets this many.
constexpr uint32_t default_max_in_flight = 256;

void queue_unsubscribed(session_state& st, uint64_t subscription_id,
                        const std::string& reason) {
  auto frame = std::make_unique<pb::ServerFrame>();
  frame->mutable_unsubscribed()->set_subscription_id(subscription_id);
  frame->mutable_unsubscribed()->set_reason(reason);
  st.control.push_back(std::move(frame));
}

// The most tags one membership carries, and the longest tag.
constexpr int max_tags = 16;
constexpr std::size_t max_tag_bytes = 64;

// Returns why `tags` are not acceptable member tags, or no error.
error_info
validate_tags(const google::protobuf::RepeatedPtrField<std::string>& tags) {
  if (tags.size() > max_tags)
    return make_error_info(ec::invalid_request,
                           std::to_string(tags.size()) +
                               " tags exceed the limit of " +
                               std::to_string(max_tags));
  for (auto& tag : tags) {
    auto ok = !tag.empty() && tag.size() <= max_tag_bytes;
    for (auto c : tag)
      ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                  c == '-' || c == '.' || c == ':' || c == '=');
    if (!ok)
      return make_error_info(ec::invalid_request,
                             "tag \"" + tag +
                                 "\": a tag has 1 to 64 bytes of "
                                 "[A-Za-z0-9_.:=-]");
  }
  return {};
}

} // namespace

session_actor self_handle(session_pointer self) {
  return caf::actor_cast<session_actor>(self);
}

size_t subscription_count(const session_state& st) {
  return st.deliveries.subscriptions() + st.memberships.size();
}

void join_group(session_pointer self, const subscribe_answer_ptr& answer,
                const pb::Subscribe& req) {
  auto& st = self->state;
  auto id = req.subscription_id();
  auto request_id = answer->request_id;
  auto err = validate_group_name(req.group());
  if (!err)
    err = validate_tags(req.tags());
  if (!err) // the majority rule (cluster)
    err = quorum_refusal(st, "group \"" + req.group() +
                                 "\" refuses joins until this node sees a "
                                 "majority");
  if (err) {
    queue_error(self, request_id, "subscribe", id, err);
    return;
  }
  // Every membership's max_in_flight is promised out of one budget per
  // session (spec 7): a join gets what it asks for, at most what is left.
  uint64_t promised = 0;
  for (auto& [other_id, other] : st.memberships)
    promised += other.max_in_flight;
  auto budget = st.ctx.limits.max_in_flight_per_session;
  if (promised >= budget) {
    queue_error(self, request_id, "subscribe", id,
                make_error_info(ec::limit_exceeded,
                                "this session's memberships already hold "
                                "limits.max_in_flight_per_session = " +
                                    std::to_string(budget) +
                                    " deliveries in flight"));
    return;
  }
  uint32_t asked =
      req.max_in_flight() != 0 ? req.max_in_flight() : default_max_in_flight;
  auto granted =
      static_cast<uint32_t>(std::min<uint64_t>(asked, budget - promised));
  auto spec = member_spec{
      id,      granted,        {req.tags().begin(), req.tags().end()},
      st.peer, st.client_name, st.grant.token};
  auto& m = st.memberships[id];
  m.group = req.group();
  m.max_in_flight = granted;
  m.pattern = req.pattern();
  m.spec = spec;
  ++st.stats.subscriptions;
  ++answer->pending;
  self->request(st.ctx.router, caf::infinite, join_atom_v, req.group(),
                req.pattern(), self_handle(self), std::move(spec))
      .then(
          [self, id, answer](group_actor group) {
            auto& st = self->state;
            auto i = st.memberships.find(id);
            if (i == st.memberships.end()) {
              // Unsubscribed while joining: leave at once.
              self->send(group, leave_atom_v, self_handle(self), id);
              settle_subscription(self, *answer);
              flush(self);
              return;
            }
            i->second.handle = group;
            // A group on another node is monitored: its node's loss makes
            // the membership re-join (actors/session/session_rejoin.cpp).
            watch_group(self, group, i->second.group);
            confirm_subscription(self, *answer, id);
            for (auto& item : i->second.early)
              st.group_outbox.push_back(std::move(item));
            i->second.early.clear();
            settle_subscription(self, *answer);
            flush(self);
          },
          [self, id, answer](caf::error& err) {
            auto& st = self->state;
            if (st.memberships.erase(id) > 0)
              --st.stats.subscriptions;
            queue_error(self, answer->request_id, "subscribe", id,
                        to_error_info(err));
            settle_subscription(self, *answer);
            flush(self);
          });
}

bool leave_group(session_pointer self, uint64_t subscription_id,
                 const std::string& reason) {
  auto& st = self->state;
  auto i = st.memberships.find(subscription_id);
  if (i == st.memberships.end())
    return false;
  // The member may still answer what it holds (spec 6: draining); what
  // the client never saw goes straight back.
  if (i->second.handle)
    self->send(i->second.handle, leave_atom_v, self_handle(self),
               subscription_id);
  std::vector<uint64_t> unseen;
  group_actor owner;
  for (auto& item : i->second.early) {
    auto j = st.delivery_owners.find(item.delivery_id);
    if (j == st.delivery_owners.end())
      continue;
    owner = j->second;
    unseen.push_back(item.delivery_id);
    st.delivery_owners.erase(j);
  }
  if (!unseen.empty())
    self->send(owner, nack_atom_v, self_handle(self), std::move(unseen),
               uint32_t{0});
  st.memberships.erase(i);
  st.patterns.erase(subscription_id);
  --st.stats.subscriptions;
  queue_unsubscribed(st, subscription_id, reason);
  return true;
}

void answer_deliveries(session_pointer self, const pb::ClientFrame& frame) {
  auto& st = self->state;
  if (auto err = refuse_answers(st, frame)) {
    // The deliveries stay the session's: answered again once the node sees
    // a majority, or redelivered after ack_wait.
    queue_error(self, frame.request_id(), answer_name(frame), 0, err);
    return;
  }
  const google::protobuf::RepeatedField<uint64_t>* ids = nullptr;
  bool keeps = false; // in progress: the delivery stays unanswered
  switch (frame.kind_case()) {
  case pb::ClientFrame::kAck:
    ids = &frame.ack().delivery_ids();
    break;
  case pb::ClientFrame::kNack:
    ids = &frame.nack().delivery_ids();
    break;
  default:
    ids = &frame.in_progress().delivery_ids();
    keeps = true;
    break;
  }
  std::vector<std::pair<group_actor, std::vector<uint64_t>>> by_group;
  auto batch_of = [&](const group_actor& group) -> std::vector<uint64_t>& {
    auto pos = std::find_if(by_group.begin(), by_group.end(),
                            [&](const auto& x) { return x.first == group; });
    if (pos == by_group.end())
      pos = by_group.emplace(by_group.end(), group, std::vector<uint64_t>{});
    return pos->second;
  };
  std::vector<uint64_t> unknown;
  for (auto id : *ids) {
    auto i = st.delivery_owners.find(id);
    if (i == st.delivery_owners.end()) {
      ++st.stats.stale_answers;
      unknown.push_back(id);
      continue;
    }
    batch_of(i->second).push_back(id);
    if (!keeps)
      st.delivery_owners.erase(i);
  }
  // Unknown, already answered or superseded by a redelivery: the session no
  // longer knows the group, so each group it is a member of gets the id,
  // finds it is not this session's delivery in flight, ignores and counts
  // it (spec 6, ListGroups stale_answers); it never answers another delivery.
  if (!unknown.empty())
    for (auto& [id, m] : st.memberships)
      if (m.handle) {
        auto& batch = batch_of(m.handle);
        batch.insert(batch.end(), unknown.begin(), unknown.end());
      }
  auto me = self_handle(self);
  for (auto& [group, batch] : by_group) {
    switch (frame.kind_case()) {
    case pb::ClientFrame::kAck:
      self->send(group, ack_atom_v, me, std::move(batch));
      break;
    case pb::ClientFrame::kNack:
      if (frame.nack().requeue())
        self->send(group, nack_atom_v, me, std::move(batch),
                   frame.nack().delay_ms());
      else
        self->send(group, reject_atom_v, me, std::move(batch));
      break;
    default:
      self->send(group, progress_atom_v, me, std::move(batch));
      break;
    }
  }
}

void accept_group_deliveries(session_pointer self,
                             group_delivery_batch& batch) {
  auto& st = self->state;
  auto group = caf::actor_cast<group_actor>(self->current_sender());
  std::vector<uint64_t> unwanted;
  for (auto& item : batch.items) {
    auto i = st.memberships.find(item.subscription_id);
    if (st.closing || i == st.memberships.end()) {
      // Sent before the member left: give it straight back.
      unwanted.push_back(item.delivery_id);
      continue;
    }
    st.delivery_owners.emplace(item.delivery_id, group);
    if (item.reply)
      open_group_request(self, item, group);
    if (!i->second.handle)
      i->second.early.push_back(std::move(item));
    else
      st.group_outbox.push_back(std::move(item));
  }
  if (!unwanted.empty())
    self->send(group, nack_atom_v, self_handle(self), std::move(unwanted),
               uint32_t{0});
  flush(self);
}

void forget_deliveries(session_state& st, const std::vector<uint64_t>& ids) {
  for (auto id : ids)
    st.delivery_owners.erase(id);
}

void end_membership(session_pointer self, uint64_t subscription_id,
                    const std::string& reason) {
  auto& st = self->state;
  auto i = st.memberships.find(subscription_id);
  if (i == st.memberships.end())
    return;
  auto group = i->second.handle;
  st.memberships.erase(i);
  st.patterns.erase(subscription_id);
  --st.stats.subscriptions;
  for (auto j = st.delivery_owners.begin(); j != st.delivery_owners.end();)
    j = j->second == group ? st.delivery_owners.erase(j) : std::next(j);
  queue_unsubscribed(st, subscription_id, reason);
  flush(self);
}

size_t drain_group_outbox(session_state& st, pb::ServerFrame& frame,
                          size_t max) {
  if (st.group_outbox.empty())
    return 0;
  auto* out = frame.mutable_deliveries()->mutable_deliveries();
  size_t moved = 0;
  while (!st.group_outbox.empty() && moved < max) {
    auto& item = st.group_outbox.front();
    auto* d = out->Add();
    to_delivery(*item.message, item.subscription_id, *d);
    d->set_delivery_id(item.delivery_id);
    d->set_attempt(item.attempt);
    if (item.reply) {
      d->set_reply_handle(item.delivery_id);
      d->set_reply_deadline_unix_nanos(item.reply.deadline_unix_nanos);
    }
    st.group_outbox.pop_front();
    ++moved;
  }
  return moved;
}

} // namespace tb
