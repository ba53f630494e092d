// One message delivered to a subscription of the asynchronous client, with
// the answers a consumer-group member gives (ack, nack, reject, in progress).

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "tinybroker.pb.h"

namespace tb::client {

namespace detail {
class client_core;
} // namespace detail

/// How a group delivery is answered.
enum class answer_kind {
  /// Done and forgotten.
  ack,
  /// Held again and redelivered (after an optional delay).
  nack,
  /// Straight to the group's dead letter topic.
  reject,
  /// Still being worked on: the ack deadline moves back by `ack_wait`.
  in_progress,
};

/// A delivered message. Move-only; answer it from any thread, once (ack,
/// nack or reject; in_progress as often as needed before that). Answers are
/// coalesced with others into one frame per `answer_linger`.
class delivery {
public:
  /// Wraps `message`, received on the connection numbered `generation`.
  delivery(tinybroker::v1::Delivery message,
           std::weak_ptr<detail::client_core> core, uint64_t generation);

  delivery(delivery&&) = default;
  delivery& operator=(delivery&&) = default;
  delivery(const delivery&) = delete;
  delivery& operator=(const delivery&) = delete;

  /// The topic the message was published to.
  const std::string& topic() const {
    return message_.topic();
  }

  /// The payload as published.
  const std::string& payload() const {
    return message_.payload();
  }

  /// The headers as published (dead letters add x-tinybroker-* headers).
  const google::protobuf::Map<std::string, std::string>& headers() const {
    return message_.headers();
  }

  /// The key as published.
  const std::string& key() const {
    return message_.key();
  }

  /// The broker-wide message id.
  uint64_t message_id() const {
    return message_.message_id();
  }

  /// Group deliveries: 1 on first delivery, counting up on redelivery.
  uint32_t attempt() const {
    return message_.attempt();
  }

  /// The priority it was published with (0 to 9; 0 when none).
  uint32_t priority() const {
    return message_.priority();
  }

  /// True for a consumer-group delivery (one that takes an answer).
  bool from_group() const {
    return message_.delivery_id() != 0;
  }

  /// The whole delivery as received.
  const tinybroker::v1::Delivery& proto() const {
    return message_;
  }

  /// Acks: the message is done. False when there is nothing to answer
  /// (fan-out, answered already) or the connection that carried it is gone
  /// (the broker then redelivers it).
  bool ack();

  /// Nacks with requeue: redelivered after `delay` (0 = at once).
  bool nack(std::chrono::milliseconds delay = std::chrono::milliseconds{0});

  /// Rejects: the message goes to the group's dead letter topic at once.
  bool reject();

  /// Pushes the ack deadline back by the group's ack_wait.
  bool in_progress();

  /// True once acked, nacked or rejected.
  bool answered() const {
    return answered_;
  }

  /// True for a request (request/reply): answer it with `reply`.
  bool is_request() const {
    return message_.reply_handle() != 0;
  }

  /// Replies to a request: the reply goes to the caller alone and, for a
  /// group delivery, acks it. False when it is no request, was answered,
  /// or the connection that carried it is gone (client/client_request.cpp).
  bool reply(std::string payload,
             const std::map<std::string, std::string>& headers = {});

private:
  bool answer(answer_kind kind, std::chrono::milliseconds delay);

  tinybroker::v1::Delivery message_;
  std::weak_ptr<detail::client_core> core_;
  uint64_t generation_;
  bool answered_ = false;
};

/// Called for each delivery of a subscription, on the client's callback
/// thread, in delivery order.
using delivery_handler = std::function<void(delivery)>;

} // namespace tb::client
