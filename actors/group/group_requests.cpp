// Requests held by a group (request/reply with a group): the group keeps
// each one's reply target beside the ledger, by message id, and hands it
// with every delivery of that message, so a redelivery is answerable too.
// The member's reply acks the delivery (docs/semantics.md).

#include <algorithm>
#include <chrono>

#include "actors/group/group_actor.hpp"

namespace tb {

namespace {

// Targets kept before the first sweep of those past their deadline.
constexpr std::size_t min_prune_at = 64;

// Checks that a member may answer the request `msg` and records where its
// reply goes.
error_info admit_request(group_pointer self, const message_ref& msg,
                         const reply_target& target) {
  auto& st = self->state;
  auto has_member =
      std::any_of(st.members.begin(), st.members.end(),
                  [](const auto& kv) { return kv.second.active; });
  if (!has_member)
    return make_error_info(ec::no_responders,
                           "group \"" + st.group +
                               "\" has no member to answer the request");
  // Targets leave when their message is acked; those of messages that left
  // otherwise (dead letters, drop_oldest) are swept once past their
  // deadline, whenever the map doubled: bounded, O(1) amortized.
  if (st.requests.size() >= st.request_prune_at) {
    auto now = now_unix_nanos();
    for (auto i = st.requests.begin(); i != st.requests.end();)
      i = i->second.deadline_unix_nanos < now ? st.requests.erase(i)
                                              : std::next(i);
    st.request_prune_at = std::max(min_prune_at, 2 * st.requests.size());
  }
  st.requests.emplace(msg->id(), target);
  return {};
}

} // namespace

caf::result<caf::ok_atom> hold_request(group_pointer self, message_ref& msg,
                                       const reply_target& target) {
  if (auto err = admit_request(self, msg, target))
    return make_caf_error(err.code, err.text);
  auto id = msg->id();
  std::vector<message_ref> one{std::move(msg)};
  auto reply = enqueue(self, one);
  if (!reply.refused.empty()) {
    forget_request(self, id);
    return make_caf_error(reply.code, reply.reason);
  }
  return caf::ok_atom_v;
}

void forget_request(group_pointer self, uint64_t message_id) {
  auto& st = self->state;
  if (!st.requests.empty())
    st.requests.erase(message_id);
}

void attach_reply(group_pointer self, group_delivery& delivery) {
  auto& st = self->state;
  if (st.requests.empty())
    return;
  if (auto i = st.requests.find(delivery.message->id()); i != st.requests.end())
    delivery.reply = i->second;
}

} // namespace tb
