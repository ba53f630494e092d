// Who takes a relay's messages (tools/relay, tools/relay_cq): every fan-out
// subscription, and one member of each group in turn. The relays measure the
// transport, not routing: patterns are not matched, groups have no credit
// and no redelivery. Shared by both relays; `Writer` is their stream type,
// with `write(std::unique_ptr<ServerFrame>)`.

#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "tinybroker.pb.h"

namespace tb::relay {

/// Appends message `i` of `publish` to `frame` as a delivery for
/// `subscription_id`; a group member's delivery carries a delivery id (the
/// message id) and attempt 1.
inline void add_relay_delivery(tinybroker::v1::ServerFrame& frame,
                               const tinybroker::v1::Publish& publish, int i,
                               uint64_t subscription_id, uint64_t id,
                               int64_t accepted, bool group) {
  const auto& msg = publish.messages(i);
  auto* d = frame.mutable_deliveries()->add_deliveries();
  d->set_subscription_id(subscription_id);
  d->set_message_id(id);
  d->set_accepted_unix_nanos(accepted);
  d->set_topic(msg.topic());
  d->set_payload(msg.payload());
  if (!msg.key().empty())
    d->set_key(msg.key());
  if (!msg.headers().empty())
    *d->mutable_headers() = msg.headers();
  if (group) {
    d->set_delivery_id(id);
    d->set_attempt(1);
  }
}

/// Makes `reply` the UNIMPLEMENTED error a relay answers a frame with that
/// is not a subscribe, unsubscribe, publish or answer.
inline void refuse_relay_frame(tinybroker::v1::ServerFrame& reply,
                               uint64_t request_id) {
  auto* error = reply.mutable_error();
  error->set_request_id(request_id);
  error->mutable_error()->set_code(grpc::StatusCode::UNIMPLEMENTED);
  error->mutable_error()->set_reason("unimplemented");
  error->mutable_error()->set_message(
      "the relay forwards publish frames to subscriptions and groups only");
}

/// The subscriptions and groups of a relay, for streams of type `Writer`.
template <class Writer>
class relay_hub {
public:
  /// One subscription: the stream and the id it asked for.
  struct subscriber {
    /// The stream that takes its deliveries.
    std::shared_ptr<Writer> stream;
    /// The id the stream gave it.
    uint64_t subscription_id;
  };

  /// Adds a fan-out subscription (every message goes to it).
  void add(subscriber sub) {
    std::lock_guard<std::mutex> guard{mutex_};
    subscribers_.push_back(std::move(sub));
  }

  /// Adds `sub` as a member of `group`: each message goes to one member,
  /// in turn (acks are taken and dropped).
  void join(const std::string& group, subscriber sub) {
    std::lock_guard<std::mutex> guard{mutex_};
    groups_[group].members.push_back(std::move(sub));
  }

  /// Forgets `group` and its members.
  void drop_group(const std::string& group) {
    std::lock_guard<std::mutex> guard{mutex_};
    groups_.erase(group);
  }

  /// Removes the subscriptions of `stream` (all, or only `subscription_id`).
  void remove(const Writer* stream, uint64_t subscription_id = 0) {
    auto gone = [&](const subscriber& s) {
      return s.stream.get() == stream &&
             (subscription_id == 0 || s.subscription_id == subscription_id);
    };
    // Released after the lock (declared first): the last reference to a
    // stream may be among them.
    std::vector<subscriber> released;
    std::lock_guard<std::mutex> guard{mutex_};
    auto keep = [&](const subscriber& s) {
      return !gone(s);
    };
    auto split =
        std::stable_partition(subscribers_.begin(), subscribers_.end(), keep);
    std::move(split, subscribers_.end(), std::back_inserter(released));
    subscribers_.erase(split, subscribers_.end());
    for (auto& [name, group] : groups_) {
      auto members = std::stable_partition(group.members.begin(),
                                           group.members.end(), keep);
      std::move(members, group.members.end(), std::back_inserter(released));
      group.members.erase(members, group.members.end());
    }
  }

  /// Takes one client frame of `stream`: subscribes (a Subscribe with a
  /// group joins it), unsubscribes or forwards a publish; acks and nacks are
  /// taken and dropped, anything else is answered UNIMPLEMENTED. Returns the
  /// answer to write back, or null when none is due.
  std::unique_ptr<tinybroker::v1::ServerFrame>
  take(const tinybroker::v1::ClientFrame& frame,
       const std::shared_ptr<Writer>& stream) {
    using frame_kind = tinybroker::v1::ClientFrame;
    auto reply = std::make_unique<tinybroker::v1::ServerFrame>();
    switch (frame.kind_case()) {
    case frame_kind::kSubscribe: {
      auto id = frame.subscribe().subscription_id();
      if (frame.subscribe().group().empty())
        add({stream, id});
      else
        join(frame.subscribe().group(), {stream, id});
      reply->mutable_subscribed()->set_subscription_id(id);
      reply->mutable_subscribed()->set_request_id(frame.request_id());
      return reply;
    }
    case frame_kind::kUnsubscribe: {
      auto id = frame.unsubscribe().subscription_id();
      remove(stream.get(), id);
      reply->mutable_unsubscribed()->set_subscription_id(id);
      return reply;
    }
    case frame_kind::kPublish: {
      auto ids = forward(frame.publish());
      if (!frame.publish().confirm())
        return nullptr;
      auto* confirm = reply->mutable_publish_confirm();
      confirm->set_request_id(frame.request_id());
      for (auto id : ids)
        confirm->add_results()->set_id(id);
      return reply;
    }
    case frame_kind::kAck:
    case frame_kind::kNack:
    case frame_kind::kInProgress:
      return nullptr; // taken, as the broker takes them; nothing to redeliver
    default:
      refuse_relay_frame(*reply, frame.request_id());
      return reply;
    }
  }

  /// Forwards `publish` to every fan-out subscription and to one member of
  /// each group; returns the message ids given, in order.
  std::vector<uint64_t> forward(const tinybroker::v1::Publish& publish) {
    auto count = publish.messages_size();
    auto accepted = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    std::vector<subscriber> targets;
    // Each group's member for each message, chosen in turn.
    std::vector<std::pair<subscriber, int>> picks;
    uint64_t first = 0;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      first = next_id_;
      next_id_ += static_cast<uint64_t>(count);
      targets = subscribers_;
      for (auto& [name, group] : groups_)
        for (int i = 0; !group.members.empty() && i < count; ++i)
          picks.emplace_back(group.members[group.next++ % group.members.size()],
                             i);
    }
    std::vector<uint64_t> ids(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i)
      ids[static_cast<std::size_t>(i)] = first + static_cast<uint64_t>(i);
    for (auto& target : targets) {
      auto frame = std::make_unique<tinybroker::v1::ServerFrame>();
      frame->mutable_deliveries()->mutable_deliveries()->Reserve(count);
      for (int i = 0; i < count; ++i)
        add_relay_delivery(*frame, publish, i, target.subscription_id,
                           ids[static_cast<std::size_t>(i)], accepted, false);
      target.stream->write(std::move(frame));
    }
    for (auto& [member, i] : picks) {
      auto frame = std::make_unique<tinybroker::v1::ServerFrame>();
      add_relay_delivery(*frame, publish, i, member.subscription_id,
                         ids[static_cast<std::size_t>(i)], accepted, true);
      member.stream->write(std::move(frame));
    }
    return ids;
  }

private:
  // A group's members and whose turn it is.
  struct group {
    std::vector<subscriber> members;
    std::size_t next = 0;
  };

  std::mutex mutex_;
  std::vector<subscriber> subscribers_;
  std::map<std::string, group> groups_;
  uint64_t next_id_ = 1;
};

} // namespace tb::relay
