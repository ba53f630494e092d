// Values of request/reply that travel between sessions, groups and the
// router. Included by actors/protocol.hpp, which registers their type IDs.
//
// A request's reply travels back by `reply_target`: the caller's session
// actor and the request's key there. Responders never see it: their session
// keeps it under an opaque, session-local reply handle (the
// Delivery.reply_handle), so a client can only answer a request its own
// session received (docs/semantics.md, "Request and reply").

#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include "actors/message.hpp"

namespace tb {

/// Where the reply to a request goes.
struct reply_target {
  /// The caller's session (a `session_actor`); null for a plain message.
  caf::actor caller;
  /// The request's key in the caller's session (its message id).
  uint64_t request = 0;
  /// When the caller stops waiting, in Unix nanoseconds.
  int64_t deadline_unix_nanos = 0;

  /// Returns true if this names a caller.
  explicit operator bool() const noexcept {
    return static_cast<bool>(caller);
  }
};

/// @relates reply_target
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reply_target& x) {
  return f(caf::meta::type_name("reply_target"), x.caller, x.request,
           x.deadline_unix_nanos);
}

/// A request for one fan-out subscription of the receiving session.
struct request_delivery {
  /// The request message.
  message_ref message;
  /// The subscription, within the receiving session.
  uint64_t subscription_id = 0;
  /// Where its reply goes.
  reply_target reply;
};

/// @relates request_delivery
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_delivery& x) {
  return f(caf::meta::type_name("request_delivery"), x.message,
           x.subscription_id, x.reply);
}

/// A reply on its way from the responder's session to the caller's.
struct reply_body {
  /// The reply's payload.
  std::string payload;
  /// The reply's headers.
  header_list headers;
};

/// @relates reply_body
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reply_body& x) {
  return f(caf::meta::type_name("reply_body"), x.payload, x.headers);
}

/// A session's request/reply counters (Stats, metrics).
struct request_stats {
  /// Requests it sent that were routed.
  uint64_t requests = 0;
  /// Replies it received for them.
  uint64_t replies = 0;
  /// Its requests answered NO_RESPONDERS.
  uint64_t no_responders = 0;
  /// Its requests that timed out.
  uint64_t timeouts = 0;
  /// Replies it sent that were dropped as late.
  uint64_t late_replies = 0;
  /// Its requests waiting for their reply (a gauge).
  uint64_t pending = 0;
};

/// @relates request_stats
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_stats& x) {
  return f(caf::meta::type_name("request_stats"), x.requests, x.replies,
           x.no_responders, x.timeouts, x.late_replies, x.pending);
}

/// Adds the counters (and the pending gauge) of `x` to `total`.
/// @relates request_stats
inline void accumulate(request_stats& total, const request_stats& x) {
  total.requests += x.requests;
  total.replies += x.replies;
  total.no_responders += x.no_responders;
  total.timeouts += x.timeouts;
  total.late_replies += x.late_replies;
  total.pending += x.pending;
}

} // namespace tb
