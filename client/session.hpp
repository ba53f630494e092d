// One Session stream of the tinybroker C++ client.

#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "tinybroker.grpc.pb.h"

namespace tb::client {

struct outgoing_message;

/// One subscription of a `session::subscribe_batch` call.
struct subscription_request {
  /// The client-chosen id, unique among the stream's live subscriptions.
  uint64_t subscription_id = 0;
  /// The topic pattern.
  std::string pattern;
  /// The consumer group to join; empty for a fan-out subscription.
  std::string group = {};
};

/// A Session stream: send requests from any thread and take the frames the
/// broker sends with `next()` or `wait_for()`. The session has no thread of
/// its own: the thread that waits in one of its calls polls the stream
/// (docs/client.md, "Threading").
class session {
public:
  /// The kinds of frames the broker sends.
  using frame_kind = tinybroker::v1::ServerFrame::KindCase;

  /// How many received frames a session holds that no `next()` took yet;
  /// past that it reads no more, and the broker holds the rest.
  static constexpr std::size_t max_read_ahead = 4096;

  /// Starts the stream on `stub`; returns once the call is started. A
  /// non-empty `client_name` names this stream in the broker's Stats and
  /// log lines, instead of its channel's name (see `make_channel`); throws
  /// `invalid_request` if it cannot name a client.
  explicit session(tinybroker::v1::Broker::Stub& stub,
                   const std::string& client_name = {});

  /// Cancels the stream if still open and waits for its operations.
  ~session();

  session(const session&) = delete;
  session& operator=(const session&) = delete;

  /// Sends a raw frame; false if the stream is broken. Throws
  /// `invalid_request` (client/check.hpp), sending nothing, if a string
  /// in it is not UTF-8; so do the calls below, which send through it.
  bool send(const tinybroker::v1::ClientFrame& frame);

  /// Sends a raw frame with `options`: with `set_buffer_hint()` gRPC may
  /// hold it back and send it with the next frame (one socket write for a
  /// burst). False if the stream is broken.
  bool send(const tinybroker::v1::ClientFrame& frame,
            grpc::WriteOptions options);

  /// Subscribes `subscription_id` to `pattern` (fan-out when `group` is
  /// empty).
  bool subscribe(uint64_t subscription_id, const std::string& pattern,
                 const std::string& group = "", uint64_t request_id = 0);

  /// Makes `subscriptions` with one SubscribeBatch frame (at most the
  /// broker's limits.max_subscribe_batch, 4,096 by default): the broker
  /// answers with an ErrorFrame per refused entry, then one SubscribedBatch
  /// listing the ids in place.
  bool subscribe_batch(const std::vector<subscription_request>& subscriptions,
                       uint64_t request_id = 0);

  /// Joins consumer group `group` on `pattern` as subscription
  /// `subscription_id`, holding at most `max_in_flight` unacked deliveries
  /// (0 = the broker's default, 256), with `tags` for the group's policy.
  bool join(uint64_t subscription_id, const std::string& group,
            const std::string& pattern, uint32_t max_in_flight = 0,
            uint64_t request_id = 0, const std::vector<std::string>& tags = {});

  /// Acks group deliveries: done and forgotten.
  bool ack(const std::vector<uint64_t>& delivery_ids);

  /// Negatively acks group deliveries: redelivered after `delay_ms`.
  bool nack(const std::vector<uint64_t>& delivery_ids, uint32_t delay_ms = 0);

  /// Rejects group deliveries: straight to the dead letter topic.
  bool reject(const std::vector<uint64_t>& delivery_ids);

  /// Pushes back the ack deadlines of group deliveries by the group's
  /// ack_wait.
  bool in_progress(const std::vector<uint64_t>& delivery_ids);

  /// Ends a subscription.
  bool unsubscribe(uint64_t subscription_id, uint64_t request_id = 0);

  /// Publishes a batch on the stream, asking for a confirm if `confirm`.
  bool publish(const std::vector<outgoing_message>& messages,
               bool confirm = false, uint64_t request_id = 0);

  /// Takes the next frame, waiting up to `timeout`; nothing once the
  /// stream ended and every frame was taken, or on timeout.
  std::optional<tinybroker::v1::ServerFrame>
  next(std::chrono::milliseconds timeout);

  /// Takes frames until one of `kind` arrives and returns it; the frames
  /// skipped on the way are appended to `skipped` if given.
  std::optional<tinybroker::v1::ServerFrame>
  wait_for(frame_kind kind, std::chrono::milliseconds timeout,
           std::vector<tinybroker::v1::ServerFrame>* skipped = nullptr);

  /// Collects delivered messages until `count` arrived or `timeout` passed.
  std::vector<tinybroker::v1::Delivery>
  receive(std::size_t count, std::chrono::milliseconds timeout);

  /// Half-closes the stream (no more requests) and waits for the broker to
  /// end it; returns the final status. Frames still unread stay for
  /// `next()`.
  grpc::Status
  close(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// Cancels the stream at once, as a crashed client would.
  void cancel();

  /// Returns true once the broker ended the stream (it looks without
  /// waiting).
  bool ended() const;

  /// Returns the final status, valid once `ended()`.
  grpc::Status status() const;

private:
  using clock = std::chrono::steady_clock;
  using lock = std::unique_lock<std::mutex>;

  template <class Done>
  bool drive_until(lock& guard, Done done, clock::time_point deadline);
  void handle(void* tag, bool ok);
  void read_more();
  void finish();
  void poll_now();

  grpc::ClientContext context_;
  grpc::CompletionQueue queue_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<tinybroker::v1::ClientFrame,
                                                tinybroker::v1::ServerFrame>>
      stream_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool polling_ = false;
  bool started_ = false;
  bool reading_ = false;
  bool read_failed_ = false;
  bool writing_ = false;
  uint64_t writes_finished_ = 0;
  bool write_failed_ = false;
  bool writes_done_ = false;
  bool writes_done_pending_ = false;
  bool finishing_ = false;
  bool ended_ = false;
  tinybroker::v1::ServerFrame incoming_;
  std::deque<tinybroker::v1::ServerFrame> frames_;
  grpc::Status status_;
  grpc::Status final_status_;
};

} // namespace tb::client
