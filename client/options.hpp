// Settings and results of the asynchronous tinybroker client
// (client/async_client.hpp).

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "client/security.hpp"

namespace tb::client {

/// Settings of an `async_client`; every field has a usable default.
struct client_options {
  /// The token and TLS settings of the channel; reconnects keep them. A
  /// setting that cannot be used makes the constructor throw
  /// `security_error`.
  security_options security;
  /// How long a published message waits for others to join its batch.
  std::chrono::milliseconds linger{5};
  /// The most messages in one publish frame (the broker takes up to 4096).
  std::size_t max_batch_messages = 256;
  /// A batch is sent at once when its messages reach this many bytes.
  std::size_t max_batch_bytes = 1 << 20;
  /// The most publishes queued or awaiting their confirm; `publish` waits
  /// for room up to `publish_block`, then fails with RESOURCE_EXHAUSTED.
  std::size_t max_pending_publishes = 16384;
  /// How long `publish` (and an answer) waits for room in a full queue.
  std::chrono::milliseconds publish_block{10000};
  /// How long answers (ack, nack, reject, in progress) wait to be coalesced
  /// with others into one frame.
  std::chrono::milliseconds answer_linger{2};
  /// This many queued answers are sent at once, without waiting.
  std::size_t max_answer_batch = 512;
  /// The most answers queued; `ack` and the others wait for room beyond.
  std::size_t max_pending_answers = 65536;
  /// The most deliveries and notices queued for the callback thread; the
  /// reader stops reading (and the broker buffers) while it is full.
  std::size_t max_queued_callbacks = 4096;
  /// The first wait between connection attempts; doubled on each failure.
  std::chrono::milliseconds reconnect_initial_backoff{100};
  /// The longest wait between connection attempts.
  std::chrono::milliseconds reconnect_max_backoff{2000};
  /// Failed connection attempts in a row after which the client gives up
  /// and closes with UNAVAILABLE (at least 1). With several addresses this
  /// counts rounds: each address is tried this many times.
  int reconnect_max_attempts = 20;
  /// With several addresses (issue 30): shuffle them once when the client
  /// starts, as NATS clients do unless told `NoRandomize`, so that clients
  /// given the same list spread over the nodes. False: try them in the
  /// order given (the first reachable one is used first). Either way, a
  /// lost or refused connection moves on to the next address at once, and
  /// the backoff is waited only after every address failed in a round.
  bool randomize_addresses = true;
  /// Idempotent publishing (issue 28): every message gets a `msg_id`
  /// unless it has one (15 bytes: 8 random bytes of this client and a
  /// 7-byte counter, client/msg_id.hpp; a frame of consecutive generated
  /// ids carries only the first, as Publish.msg_id_base), and
  /// the messages unconfirmed when a connection is lost are sent again,
  /// with the same ids, once the client reconnects; the broker confirms a
  /// copy it already routed as a duplicate. A lost connection then neither
  /// loses nor doubles a message, as long as the client reconnects within
  /// the broker's de-duplication window (default 2 min). Off: such
  /// messages fail with UNAVAILABLE ("may or may not be routed").
  bool idempotent = false;
  /// How long `close` waits for the broker's last confirms.
  std::chrono::milliseconds close_timeout{5000};
  /// The name of this client in the broker's Stats (sessions and group
  /// members) and log lines, as NATS's `name` and RabbitMQ's
  /// `connection_name`: e.g. "billing-worker-3". Sent in the metadata
  /// `tinybroker-client-name` of every call; at most 128 bytes of UTF-8
  /// without control characters (else the constructor throws
  /// `invalid_request`); empty sends none.
  std::string name;
  /// Called with errors that belong to no publish or subscription (a
  /// callback that threw, a refused unsubscribe), and once with the final
  /// status when the client closes itself for good (gave up reconnecting:
  /// UNAVAILABLE naming the address and the attempts; see
  /// `async_client::wait_closed`); on an internal thread. Unset, that final
  /// status is written to stderr as one warning line.
  std::function<void(const grpc::Status&)> on_error;
};

/// The outcome of one published message.
struct publish_result {
  /// The id the broker gave the message; 0 when it was refused (a message
  /// refused only by a full group has an id and an error).
  uint64_t id = 0;
  /// OK, or the error: the broker's gRPC status code and sentence, or
  /// UNAVAILABLE when the connection was lost before the confirm.
  grpc::Status status;
  /// The broker's machine-readable reason ("invalid_topic", ...), if any.
  std::string reason;
  /// True when the broker had already seen the message's `msg_id` on its
  /// topic within its window (a retry): not routed again, and `id` is the
  /// first message's id.
  bool duplicate = false;

  /// Returns true when the broker accepted the message everywhere.
  bool ok() const {
    return status.ok();
  }
};

/// Called once with a message's outcome (on an internal thread).
using publish_callback = std::function<void(const publish_result&)>;

/// Counters of what an `async_client` sent, to see batching at work.
struct client_stats {
  /// Publish frames written.
  uint64_t publish_frames = 0;
  /// Of those, the frames the publishing thread wrote itself (`linger` 0
  /// and the stream idle), without waking the I/O thread.
  uint64_t publish_frames_inline = 0;
  /// Messages in them.
  uint64_t published = 0;
  /// Ack, nack and in-progress frames written.
  uint64_t answer_frames = 0;
  /// Delivery ids in them.
  uint64_t answers = 0;
  /// Subscribe and SubscribeBatch frames sent: one per `subscribe`, and
  /// after a reconnect one per 256 subscriptions sent again.
  uint64_t subscribe_frames = 0;
  /// Streams opened (1 + reconnects).
  uint64_t connections = 0;
  /// Messages queued again after a lost connection, to be sent with their
  /// ids (`idempotent`).
  uint64_t republished = 0;
};

/// The states of an `async_client`'s connection.
enum class connection_state {
  /// Opening the first stream, or reopening it after a loss.
  connecting,
  /// A Session stream is open.
  connected,
  /// Closed by `close`, or given up after `reconnect_max_attempts`.
  closed,
};

} // namespace tb::client
