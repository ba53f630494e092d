// Builders for the client frames that actor tests hand to session actors,
// as the gRPC bridge would: subscribe, unsubscribe, publish, join, ack, nack,
// reject.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/protocol.hpp"
#include "tinybroker.pb.h"

namespace tb::test {

namespace pb = tinybroker::v1;

// -- frame builders
// ------------------------------------------------------------

/// Builds a message for `topic` with `payload`.
inline pb::Message make_message(std::string topic, std::string payload) {
  pb::Message msg;
  msg.set_topic(std::move(topic));
  msg.set_payload(std::move(payload));
  return msg;
}

/// Builds a message for `topic` with `payload`, routing key `key` and the
/// header `name`=`value` (none when `name` is empty).
inline pb::Message make_message(std::string topic, std::string payload,
                                std::string key, std::string name = {},
                                std::string value = {}) {
  auto msg = make_message(std::move(topic), std::move(payload));
  msg.set_key(std::move(key));
  if (!name.empty())
    (*msg.mutable_headers())[name] = std::move(value);
  return msg;
}

/// Builds a Subscribe frame (a fan-out subscription).
inline client_frame_ptr subscribe_frame(uint64_t request_id,
                                        uint64_t subscription_id,
                                        std::string pattern) {
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(request_id);
  frame->mutable_subscribe()->set_subscription_id(subscription_id);
  frame->mutable_subscribe()->set_pattern(std::move(pattern));
  return frame;
}

/// Builds an Unsubscribe frame.
inline client_frame_ptr unsubscribe_frame(uint64_t request_id,
                                          uint64_t subscription_id) {
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(request_id);
  frame->mutable_unsubscribe()->set_subscription_id(subscription_id);
  return frame;
}

/// Builds a Publish frame holding `messages`.
inline client_frame_ptr publish_frame(uint64_t request_id,
                                      std::vector<pb::Message> messages,
                                      bool confirm = true) {
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(request_id);
  auto* publish = frame->mutable_publish();
  publish->set_confirm(confirm);
  for (auto& msg : messages)
    *publish->add_messages() = std::move(msg);
  return frame;
}

/// Builds a Publish frame of `n` messages to `topic`, with payloads
/// `<prefix>0` ... `<prefix>n-1`.
inline client_frame_ptr publish_frame(uint64_t request_id,
                                      const std::string& topic, size_t n,
                                      const std::string& prefix = "m",
                                      bool confirm = true) {
  std::vector<pb::Message> messages;
  for (size_t k = 0; k < n; ++k)
    messages.push_back(make_message(topic, prefix + std::to_string(k)));
  return publish_frame(request_id, std::move(messages), confirm);
}

/// Builds a Subscribe frame that joins `group` with `pattern`, holding at
/// most `max_in_flight` unacked deliveries (0: the broker's default).
inline client_frame_ptr join_frame(uint64_t request_id,
                                   uint64_t subscription_id,
                                   std::string pattern, std::string group,
                                   uint32_t max_in_flight = 0,
                                   const std::vector<std::string>& tags = {}) {
  auto frame = subscribe_frame(request_id, subscription_id, std::move(pattern));
  frame->mutable_subscribe()->set_group(std::move(group));
  frame->mutable_subscribe()->set_max_in_flight(max_in_flight);
  for (auto& tag : tags)
    frame->mutable_subscribe()->add_tags(tag);
  return frame;
}

/// Builds an Ack frame for group deliveries.
inline client_frame_ptr ack_frame(uint64_t request_id,
                                  const std::vector<uint64_t>& delivery_ids) {
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(request_id);
  for (auto id : delivery_ids)
    frame->mutable_ack()->add_delivery_ids(id);
  return frame;
}

/// Builds a Nack frame: `requeue` holds the deliveries again (redelivered
/// after `delay_ms`); without it they are rejected to the dead letter topic.
inline client_frame_ptr nack_frame(uint64_t request_id,
                                   const std::vector<uint64_t>& delivery_ids,
                                   bool requeue, uint32_t delay_ms = 0) {
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(request_id);
  auto* nack = frame->mutable_nack();
  for (auto id : delivery_ids)
    nack->add_delivery_ids(id);
  nack->set_requeue(requeue);
  nack->set_delay_ms(delay_ms);
  return frame;
}

/// Builds an InProgress frame for group deliveries.
inline client_frame_ptr
in_progress_frame(uint64_t request_id,
                  const std::vector<uint64_t>& delivery_ids) {
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(request_id);
  for (auto id : delivery_ids)
    frame->mutable_in_progress()->add_delivery_ids(id);
  return frame;
}

} // namespace tb::test
