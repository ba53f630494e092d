// A session: one client's conversation, one actor per gRPC Session stream.
//
// It validates and publishes the client's messages (routing them straight
// to the destination sessions through its cache of topic routes), manages
// the client's subscriptions, and buffers deliveries until the stream can
// take them. Without a frame sink it serves unary Publish calls instead.
//
//   open --(client half-closes)--> closing --(frames written)--> done
//     \____________(stream ends / broker stops: exit)____________/

#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "actors/broker_context.hpp"
#include "actors/delivery_buffer.hpp"
#include "actors/frame_sink.hpp"
#include "actors/protocol.hpp"
#include "actors/route_cache.hpp"

namespace google::protobuf {
template <typename Element>
class RepeatedPtrField;
} // namespace google::protobuf

namespace tinybroker::v1 {
class Message;
class ServerFrame;
} // namespace tinybroker::v1

namespace tb {

/// The outcome of one published message.
struct publish_outcome {
  /// The message id, 0 if refused.
  uint64_t id = 0;
  /// Why the message was refused, if it was.
  error_info error;
};

/// A batch of messages on its way through a session: validated, given ids
/// and waiting for routes.
struct publish_job {
  /// The request_id of the publish frame (stream publishes).
  uint64_t request_id = 0;
  /// True if the client asked for a confirm frame.
  bool confirm = false;
  /// Set for unary Publish calls, answered when routed.
  unary_call_ptr unary;
  /// The accepted messages, in publish order.
  std::vector<message_ref> accepted;
  /// For each accepted message, the index of its outcome.
  std::vector<uint32_t> positions;
  /// One outcome per published message, in publish order.
  std::vector<publish_outcome> outcomes;
  /// Routes resolved for this job (in case the cache evicts them early).
  std::unordered_map<std::string, route_ref> resolved;
  /// Route lookups still outstanding.
  size_t pending_lookups = 0;
};

/// State of a session actor.
struct session_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.session";

  /// The broker's shared settings and handles.
  broker_context ctx;
  /// Where frames go; null for the unary publisher.
  frame_sink_ptr sink;
  /// Routes of the topics this session publishes to.
  route_cache routes{1024};
  /// Fan-out subscriptions and their unwritten deliveries.
  delivery_buffer deliveries{65536, 64u << 20};
  /// Frames other than deliveries, written first.
  std::deque<std::unique_ptr<tinybroker::v1::ServerFrame>> control;
  /// Client frames processed but not yet released to the reader, because
  /// the client does not read what the session writes.
  size_t owed_reads = 0;
  /// True once the client stopped sending.
  bool closing = false;
  /// True while a route sweep timer is pending.
  bool sweep_scheduled = false;
  /// Counters.
  session_stats stats;
};

/// The session's handle type with its state.
using session_pointer = session_actor::stateful_pointer<session_state>;

/// Runs a session for one stream, writing to `sink`; with a null `sink` it
/// serves unary Publish calls.
session_actor::behavior_type session_actor_impl(session_pointer self,
                                                broker_context ctx,
                                                frame_sink_ptr sink);

// -- internals shared by the session's source files
// ----------------------------

/// Starts publishing `job`: resolves missing routes, then routes it.
void run_publish(session_pointer self, std::shared_ptr<publish_job> job);

/// Validates `messages` and turns the valid ones into accepted messages.
std::shared_ptr<publish_job> make_publish_job(
    session_state& st,
    google::protobuf::RepeatedPtrField<tinybroker::v1::Message>& messages);

/// Queues an error frame that names the refused request.
void queue_error(session_pointer self, uint64_t request_id, const char* request,
                 uint64_t subscription_id, const error_info& error);

/// Writes what the stream can take now.
void flush(session_pointer self);

/// Releases one processed client frame to the reader, or owes it while
/// the client does not read.
void release_frame(session_pointer self);

} // namespace tb
