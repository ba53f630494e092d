// The shared state and threads behind tb::client::async_client: the I/O
// thread (batching, answers, reconnect), one reader thread per stream and
// the callback thread. Internal: include client/async_client.hpp instead.

#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "client/connection.hpp"
#include "client/delivery.hpp"
#include "client/detail/callback_queue.hpp"
#include "client/msg_id.hpp"
#include "client/options.hpp"
#include "client/subscription.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::client::detail {

/// The clock of linger times and backoff.
using clock = std::chrono::steady_clock;

/// Subscriptions sent in one SubscribeBatch frame at most (by
/// `subscribe_many` and after a reconnect): well under the broker's default
/// limits.max_subscribe_batch (4,096). A broker configured lower refuses the
/// whole frame; its entries then go one frame each.
inline constexpr std::size_t max_subscribes_per_frame = 256;

/// A message waiting to be sent or confirmed, with whom to tell.
struct pending_publish {
  /// The message in wire form.
  tinybroker::v1::Message message;
  /// Called once with the outcome.
  publish_callback done;
  /// Its size as the broker counts it (payload, headers, key) plus topic.
  std::size_t bytes = 0;
  /// When it was queued (for the linger time).
  clock::time_point queued_at;
  /// The number of the msg_id the client gave it (client/msg_id.hpp), or 0:
  /// none, or the user's own in `message`.
  uint64_t msg_id_number = 0;
};

/// Answers waiting to be coalesced into frames.
struct pending_answers {
  /// Delivery ids to ack.
  std::vector<uint64_t> acks;
  /// Delivery ids to reject (nack without requeue).
  std::vector<uint64_t> rejects;
  /// Delivery ids whose deadline to push back.
  std::vector<uint64_t> in_progress;
  /// Delivery ids to nack with requeue, by delay in milliseconds.
  std::map<uint32_t, std::vector<uint64_t>> nacks;
  /// How many ids in total.
  std::size_t count = 0;
  /// When the oldest was queued.
  clock::time_point first_at;
};

/// One Session stream and its reader thread.
struct stream_state {
  /// The call's context (cancel through it).
  grpc::ClientContext context;
  /// The stream.
  std::unique_ptr<grpc::ClientReaderWriter<tinybroker::v1::ClientFrame,
                                           tinybroker::v1::ServerFrame>>
      stream;
  /// Reads frames until the stream ends.
  std::thread reader;
  /// Numbers the streams of one client, from 1.
  uint64_t generation = 0;
  /// Set once a frame arrived on it.
  std::atomic<bool> got_frame{false};
  /// Set (under the core's mutex) once the broker ended it.
  bool ended = false;
  /// The final status, valid once `ended`.
  grpc::Status status;
};

/// Converts a wire error into a gRPC status.
grpc::Status to_status(const tinybroker::v1::Error& error);

/// The state behind one `async_client`. Lock order: the core's mutex, then
/// a subscription's; callbacks never run under either.
class client_core : public std::enable_shared_from_this<client_core> {
public:
  /// Makes a channel per address (tried in turn, see
  /// `client_options::randomize_addresses`); `start` launches the threads.
  client_core(std::vector<std::string> addresses, client_options options);

  /// Closes and joins the threads.
  ~client_core();

  /// Launches the I/O and callback threads.
  void start();

  /// See async_client::close.
  void close();

  /// See async_client::wait_connected.
  bool wait_connected(std::chrono::milliseconds timeout);

  /// See async_client::wait_closed; no `timeout`: waits as long as it
  /// takes.
  grpc::Status wait_closed(std::optional<std::chrono::milliseconds> timeout);

  /// See async_client::state.
  connection_state state() const;

  /// See async_client::stats.
  client_stats stats() const;

  /// See async_client::publish.
  void publish(tinybroker::v1::Message message, publish_callback done);

  /// See async_client::flush.
  bool flush(std::chrono::milliseconds timeout);

  /// See async_client::subscribe_many (and subscribe, one pattern).
  std::vector<std::shared_ptr<subscription>>
  subscribe_many(const std::vector<std::string>& patterns,
                 const delivery_handler& handler,
                 const subscribe_options& options);

  /// Ends subscription `id` at the client's request.
  void unsubscribe(uint64_t id);

  /// Queues an answer for `delivery_id` received on stream `generation`;
  /// false if that stream is gone.
  bool answer(uint64_t generation, answer_kind kind, uint64_t delivery_id,
              uint32_t delay_ms);

  /// Queues a Reply frame for a request received on stream `generation`;
  /// false if that stream is gone (client/client_request.cpp).
  bool send_reply(uint64_t generation, tinybroker::v1::ClientFrame frame);

  /// The unary connection on the channel of the current address.
  connection& unary() {
    return *nodes_[current_];
  }

  /// See async_client::address.
  std::string address() const {
    return addresses_[current_];
  }

  /// Reports an error that belongs to no request.
  void report(const grpc::Status& status);

private:
  using lock = std::unique_lock<std::mutex>;

  // client_core.cpp: the I/O thread's loop, connecting and reconnecting.
  void run();
  bool connect(lock& guard);
  bool try_node(lock& guard, std::size_t index);
  void next_address();
  grpc::Status give_up_status(lock& guard);
  void learn_limits(lock& guard);
  void open_stream(lock& guard);
  void on_established(stream_state& stream);
  void serve(lock& guard);
  bool write_frames(lock& guard, std::vector<tinybroker::v1::ClientFrame>& out);
  bool can_write_inline() const;
  void finish_stream(lock& guard);
  void shut_down(lock& guard);
  void closed_for_good(const grpc::Status& status);
  std::optional<clock::time_point> next_deadline() const;

  // client_publish.cpp: batching, confirms and failures of publishes.
  void take_publish_frames(std::vector<tinybroker::v1::ClientFrame>& out,
                           bool force);
  void number_msg_ids(const std::vector<pending_publish>& batch,
                      tinybroker::v1::Publish& publish) const;
  void take_answer_frames(std::vector<tinybroker::v1::ClientFrame>& out,
                          bool force);
  std::vector<pending_publish> take_in_flight(uint64_t request_id);
  void complete(std::vector<pending_publish> batch,
                const tinybroker::v1::PublishConfirm* confirm,
                const grpc::Status& error);
  void fail_all_in_flight(lock& guard, const grpc::Status& error);
  // Idempotent: puts the unconfirmed messages back ahead of the unsent.
  void requeue_in_flight();
  void fail_unsent(lock& guard, const grpc::Status& error);

  // client_receive.cpp: the reader thread and the frames it gets.
  void read_loop(stream_state& stream);
  void on_frame(const tinybroker::v1::ServerFrame& frame, uint64_t generation);
  void on_deliveries(const tinybroker::v1::Deliveries& batch,
                     uint64_t generation);
  void on_error_frame(const tinybroker::v1::ErrorFrame& error);
  std::shared_ptr<subscription> find(uint64_t id);
  std::shared_ptr<subscription> remove(uint64_t id);
  void end_subscription(const std::shared_ptr<subscription>& sub,
                        const grpc::Status& status);
  tinybroker::v1::ClientFrame subscribe_frame(const subscription& sub);
  static void fill_subscribe(tinybroker::v1::Subscribe& req,
                             const subscription& sub);
  void queue_subscribes(const std::vector<const subscription*>& subs);
  bool resend_batch(uint64_t request_id);

  const client_options options_;
  // The addresses in the order tried, and all of them joined (messages).
  const std::vector<std::string> addresses_;
  const std::string address_;
  // One channel per address (its unary connection, stub and diagnosis).
  std::vector<std::unique_ptr<connection>> nodes_;
  // The address in use or tried now; moves on after a failure or a loss.
  std::atomic<std::size_t> current_{0};
  callback_queue callbacks_;
  std::thread io_thread_;
  std::thread callback_thread_;

  mutable std::mutex mutex_;
  std::condition_variable io_cv_;    // wakes the I/O thread
  std::condition_variable state_cv_; // wakes callers: room, flush, state
  connection_state state_ = connection_state::connecting;
  bool closing_ = false;
  bool started_ = false;
  bool flush_requested_ = false;
  bool writing_ = false;   // a thread writes on the stream (one at a time)
  int writer_waiters_ = 0; // I/O thread waits for that write to end
  int failures_ = 0;
  uint64_t generation_ = 0;
  client_stats stats_;
  uint64_t next_request_id_ = 0;
  uint64_t next_subscription_id_ = 0;
  // Idempotent: msg_ids are this prefix (random per client) and a counter
  // (client/msg_id.hpp).
  const msg_id_prefix id_prefix_;
  uint64_t next_msg_id_ = 0;
  grpc::Status final_status_;
  // The broker's limits.max_message_bytes from its Info reply (0: unknown,
  // nothing refused here); asked once, before the first stream.
  std::size_t max_message_bytes_ = 0;
  bool limits_known_ = false;
  // Set while the final status is given to on_error (wait_closed waits).
  bool reporting_ = false;
  std::unique_ptr<stream_state> stream_;
  std::deque<pending_publish> unsent_;
  std::size_t unsent_bytes_ = 0;
  std::map<uint64_t, std::vector<pending_publish>> in_flight_;
  std::size_t pending_publishes_ = 0;
  pending_answers answers_;
  std::deque<tinybroker::v1::ClientFrame> control_;
  std::map<uint64_t, std::shared_ptr<subscription>> active_;
  // The request_id of each SubscribeBatch frame on the current stream not
  // yet answered, with the ids of its subscriptions.
  std::map<uint64_t, std::vector<uint64_t>> batches_;
};

} // namespace tb::client::detail
