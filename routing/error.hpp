// Error codes of tinybroker and the value that carries one with its
// explanation.
//
// Every refusal the broker gives names a code from `ec` and a sentence that
// names the problem. `grpc_status_code` (error.cpp) is the one table from
// `ec` to gRPC status codes, which `net/status.cpp` applies; nothing else
// maps codes. The codes sit in the routing library, the lowest layer, so
// that config, auth, actors and net all name them.

#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace tb {

/// The broker's error codes; each maps to exactly one gRPC status code.
enum class ec : uint8_t {
  /// Not an error.
  none = 0,
  /// A topic name breaks the rules of spec 2.
  invalid_topic,
  /// A subscription pattern breaks the rules of spec 2.
  invalid_pattern,
  /// A group name breaks the rules of spec 6.
  invalid_group_name,
  /// A message exceeds `max_message_bytes`.
  message_too_large,
  /// A frame or request is malformed or misses a required field.
  invalid_request,
  /// A client tried to publish to a broker-owned (`$`) topic.
  reserved_topic,
  /// A configured limit was reached (subscriptions, batch size, buffers).
  limit_exceeded,
  /// A group holds its maximum and its overflow policy is `reject`.
  group_full,
  /// A group exists with another pattern than the one asked for.
  group_pattern_conflict,
  /// The named group does not exist.
  unknown_group,
  /// The named subscription does not exist on this session.
  unknown_subscription,
  /// The request carries no valid credentials.
  unauthenticated,
  /// The credentials do not allow this topic or pattern.
  permission_denied,
  /// The broker is shutting down.
  shutting_down,
  /// The feature is declared in the protocol but not built yet.
  unimplemented,
  /// A broker-internal failure (a bug): the request may be retried.
  internal,
  /// A message's priority is above 9.
  invalid_priority,
  /// A message's schedule is wrong: both `delay_ms` and `not_before_unix_ms`
  /// set, or its due time beyond `limits.max_delay`.
  invalid_schedule,
  /// A delayed message for fan-out subscribers would pass
  /// `limits.max_delayed_fanout_per_topic` or `limits.max_delayed_fanout`.
  schedule_full,
  /// A request found no subscriber or group member to answer it.
  no_responders,
  /// A request got no reply within its timeout.
  request_timeout,
  /// A reply names a request this session never received or already
  /// answered.
  unknown_request,
  /// The node that owns a group is gone or unreachable (cluster): the
  /// operation on the group may be retried once it moved to a live node.
  node_unavailable,
  /// This node sees fewer than a majority of the configured nodes (cluster,
  /// the majority rule): it refuses group operations until it sees one.
  no_quorum,
};

/// Returns the stable, lower-case name of `code`, e.g. `"invalid_topic"`.
std::string_view to_string(ec code) noexcept;

/// Returns the gRPC status code number `code` maps to (0 = OK). This is the
/// one table from error codes to gRPC status codes.
int grpc_status_code(ec code) noexcept;

/// An error code together with a sentence that names the problem.
struct error_info {
  /// The code; `ec::none` means success.
  ec code = ec::none;
  /// What went wrong, naming the offending input.
  std::string text;

  /// Returns true if this describes an error.
  explicit operator bool() const noexcept {
    return code != ec::none;
  }
};

/// Builds an `error_info` from a code and its explanation.
inline error_info make_error_info(ec code, std::string text) {
  return error_info{code, std::move(text)};
}

} // namespace tb
