// The route a topic's publishers cache, the types it is made of, and the
// interfaces of the actors it names (sessions, groups and their replicas),
// with the three bridge types a session's interface carries. Part of the one
// place for message types (actors/protocol.hpp, which gives their type IDs):
// include that header, not this one.

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/cluster_types.hpp"
#include "actors/dedup_types.hpp"
#include "actors/group_types.hpp"
#include "actors/message.hpp"
#include "actors/replica_types.hpp"
#include "actors/stats_types.hpp"
#include "auth/access_grant.hpp"
#include "routing/error.hpp"
#include "routing/shared_chunks.hpp"

namespace tinybroker::v1 {
class ClientFrame;
} // namespace tinybroker::v1

namespace tb {

struct route;
struct unary_call;
struct unary_request_call;

/// A frame read from a client stream, handed from the reactor to its actor.
using client_frame_ptr = std::shared_ptr<tinybroker::v1::ClientFrame>;

/// A unary Publish call waiting for its answer (see net/broker_service.hpp).
using unary_call_ptr = std::shared_ptr<unary_call>;

/// A unary Request call waiting for its answer (see
/// actors/session/unary_call.hpp).
using unary_request_ptr = std::shared_ptr<unary_request_call>;

// -- routes ------------------------------------------------------------------

/// A shared, immutable route; publishers cache it and topics replace it.
struct route_ref {
  /// The route; never null once received from a topic actor.
  std::shared_ptr<const route> ptr;

  /// Accesses the route.
  const route& operator*() const noexcept {
    return *ptr;
  }

  /// Accesses the route.
  const route* operator->() const noexcept {
    return ptr.get();
  }
};

/// Routes in one message: a resolve's answer, in the order of the request's
/// topics (a null route is a topic refused by limits.max_topics), or the
/// changed routes a shard pushes to one session.
using route_list = std::vector<route_ref>;

} // namespace tb

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tb::client_frame_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tb::unary_call_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tb::unary_request_ptr)

namespace tb {

// -- actor interfaces ---------------------------------------------------------

/// A client's conversation; one per gRPC Session stream (see
/// actors/session/session_actor.hpp), plus the pool that serves unary Publish
/// calls.
using session_actor = caf::typed_actor<
    caf::reacts_to<frame_atom, client_frame_ptr>, caf::reacts_to<writable_atom>,
    caf::reacts_to<closed_atom>, caf::reacts_to<deliver_atom, fanout_batch>,
    caf::replies_to<route_atom, route_list>::with<caf::ok_atom>,
    caf::reacts_to<unary_atom, unary_call_ptr>, caf::reacts_to<tick_atom>,
    caf::replies_to<stats_atom>::with<session_stats>,
    caf::reacts_to<gdeliver_atom, group_delivery_batch>,
    caf::reacts_to<expired_atom, std::vector<uint64_t>>,
    caf::reacts_to<kicked_atom, uint64_t, std::string>,
    caf::reacts_to<rejoin_atom, uint64_t, uint64_t>,
    caf::reacts_to<rejoin_atom, caf::actor_addr>,
    caf::reacts_to<dlq_atom, message_ref>, caf::reacts_to<log_tick_atom>,
    caf::reacts_to<auth_atom, access_grant>,
    caf::reacts_to<rdeliver_atom, request_delivery>,
    caf::replies_to<reply_atom, uint64_t, reply_body>::with<bool>,
    caf::reacts_to<rtimeout_atom>,
    caf::reacts_to<unary_req_atom, unary_request_ptr>,
    // Fan-out across nodes: a link's delivery session routes these to
    // local fan-out subscribers only.
    caf::replies_to<remote_atom, std::vector<message_ref>>::with<caf::ok_atom>>;

/// A group's copy on another node (actors/group/group_replica.hpp, issue
/// 32): applies what its owner sends, in order, answers `rack`, never
/// delivers; on `promote` hands its state to its router and quits.
using replica_actor = caf::typed_actor<
    caf::reacts_to<rsnap_atom, replica_chunk>,
    caf::reacts_to<rhold_atom, uint64_t, std::vector<message_ref>>,
    caf::reacts_to<rchange_atom, uint64_t, replica_change>,
    caf::reacts_to<rsettings_atom, uint64_t, group_settings>,
    caf::replies_to<promote_atom>::with<group_seed>,
    caf::replies_to<stats_atom>::with<replica_stats>>;

/// A consumer group: holds matching messages until a member acks them (see
/// actors/group/group_actor.hpp).
using group_actor = caf::typed_actor<
    caf::replies_to<enqueue_atom,
                    std::vector<message_ref>>::with<enqueue_reply>,
    caf::replies_to<join_atom, session_actor, member_spec>::with<caf::ok_atom>,
    caf::reacts_to<leave_atom, session_actor, uint64_t>,
    caf::reacts_to<ack_atom, session_actor, std::vector<uint64_t>>,
    caf::reacts_to<nack_atom, session_actor, std::vector<uint64_t>, uint32_t>,
    caf::reacts_to<reject_atom, session_actor, std::vector<uint64_t>>,
    caf::reacts_to<progress_atom, session_actor, std::vector<uint64_t>>,
    caf::reacts_to<tick_atom>, caf::replies_to<stats_atom>::with<group_info>,
    caf::replies_to<delete_atom>::with<uint64_t>,
    caf::replies_to<delete_atom, replaced_atom>::with<uint64_t>,
    caf::replies_to<purge_atom>::with<uint64_t>, caf::reacts_to<log_tick_atom>,
    caf::replies_to<request_atom, message_ref,
                    reply_target>::with<caf::ok_atom>,
    // Replicas (issue 32): the router attaches one (null: none) at an
    // ownership term; the replica acknowledges the stream.
    caf::reacts_to<replica_atom, replica_actor, uint64_t>,
    caf::reacts_to<rack_atom, uint64_t>>;

/// One fan-out subscription a topic routes to.
struct fanout_target {
  /// The subscriber's session.
  session_actor session;
  /// The subscription id within that session.
  uint64_t subscription_id = 0;

  /// Targets are equal when session and id are.
  friend bool operator==(const fanout_target& x, const fanout_target& y) {
    return x.session == y.session && x.subscription_id == y.subscription_id;
  }
};

/// @relates fanout_target
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fanout_target& x) {
  return f(caf::meta::type_name("fanout_target"), x.session, x.subscription_id);
}

/// One fan-out subscription to add: its pattern and where its messages go.
struct fanout_subscription {
  /// The pattern, validated by the session.
  std::string pattern;
  /// The subscriber's session and subscription id.
  fanout_target target;
};

/// @relates fanout_subscription
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fanout_subscription& x) {
  return f(caf::meta::type_name("fanout_subscription"), x.pattern, x.target);
}

/// Fan-out subscriptions added together: a router or shard handles them in
/// one message, so a batch of N costs one hop, not N.
using fanout_subscriptions = std::vector<fanout_subscription>;

/// The fan-out subscriptions of a route, in chunks shared between versions.
using fanout_list = shared_chunks<fanout_target>;

/// @relates fanout_list
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fanout_list& x) {
  // Travels as a flat vector; loading rebuilds the chunks.
  auto flat = x.to_vector();
  auto rebuild = [&]() -> caf::error {
    x = fanout_list::from_vector(std::move(flat));
    return caf::none;
  };
  return f(caf::meta::type_name("fanout_list"), flat,
           caf::meta::load_callback(rebuild));
}

/// Who gets the messages of one topic: its topic shard owns it, publishing
/// sessions cache it and send straight to the destinations.
struct route {
  /// The topic.
  std::string topic;
  /// Bumped by the topic shard on every change.
  uint64_t version = 0;
  /// The fan-out subscriptions, in the order they were added.
  fanout_list fanout;
  /// The consumer groups whose pattern matches.
  std::vector<group_actor> groups;
  /// The topic shard that owns the topic (weak: the shard holds its routes):
  /// it holds the topic's delayed fan-out messages and checks its message
  /// ids for duplicates. Null in routes made by tests.
  caf::actor_addr shard;
  /// How long the topic remembers a message id, in milliseconds: the longest
  /// of the broker's window and its groups' (0 in routes made by tests: the
  /// shard's window).
  uint64_t dedup_window_ms = 0;
  /// The links to the peer nodes interested in the topic, each once however
  /// many of its patterns match (cluster; empty on a node alone).
  std::vector<link_out_actor> links;

  /// Returns true if the topic routes nowhere.
  bool empty() const noexcept {
    return fanout.empty() && groups.empty() && links.empty();
  }
};

/// @relates route
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, route& x) {
  return f(caf::meta::type_name("route"), x.topic, x.version, x.fanout,
           x.groups, x.shard, x.dedup_window_ms, x.links);
}

/// @relates route_ref
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, route_ref& x) {
  return inspect_shared(f, x.ptr, "route_ref");
}

/// What a topic shard needs to create a topic it does not hold: the name
/// and the subscriptions and groups whose patterns the router matched.
struct topic_seed {
  /// The topic.
  std::string topic;
  /// The matching fan-out subscriptions.
  std::vector<fanout_target> fanout;
  /// The matching groups.
  std::vector<group_actor> groups;
  /// The links of peers with a matching pattern, once per pattern.
  std::vector<link_out_actor> links;
};

/// @relates topic_seed
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, topic_seed& x) {
  return f(caf::meta::type_name("topic_seed"), x.topic, x.fanout, x.groups,
           x.links);
}

/// One delayed message for the fan-out subscriptions of its route, as a
/// publisher session hands it to the route's topic shard.
struct delayed_item {
  /// The message; its `delay_ms()` says when it falls due.
  message_ref message;
  /// The route it was published on: its fan-out subscriptions get it.
  route_ref route;
};

/// @relates delayed_item
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delayed_item& x) {
  return f(caf::meta::type_name("delayed_item"), x.message, x.route);
}

/// The delayed fan-out messages of one publish batch for one topic shard,
/// in publish order.
struct delayed_batch {
  /// The messages.
  std::vector<delayed_item> items;
};

/// @relates delayed_batch
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delayed_batch& x) {
  return f(caf::meta::type_name("delayed_batch"), x.items);
}

} // namespace tb
