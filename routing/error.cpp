#include "routing/error.hpp"

namespace tb {

std::string_view to_string(ec code) noexcept {
  switch (code) {
  case ec::none:
    return "none";
  case ec::invalid_topic:
    return "invalid_topic";
  case ec::invalid_pattern:
    return "invalid_pattern";
  case ec::invalid_group_name:
    return "invalid_group_name";
  case ec::message_too_large:
    return "message_too_large";
  case ec::invalid_request:
    return "invalid_request";
  case ec::reserved_topic:
    return "reserved_topic";
  case ec::limit_exceeded:
    return "limit_exceeded";
  case ec::group_full:
    return "group_full";
  case ec::group_pattern_conflict:
    return "group_pattern_conflict";
  case ec::unknown_group:
    return "unknown_group";
  case ec::unknown_subscription:
    return "unknown_subscription";
  case ec::unauthenticated:
    return "unauthenticated";
  case ec::permission_denied:
    return "permission_denied";
  case ec::shutting_down:
    return "shutting_down";
  case ec::unimplemented:
    return "unimplemented";
  case ec::internal:
    return "internal";
  case ec::invalid_priority:
    return "invalid_priority";
  case ec::invalid_schedule:
    return "invalid_schedule";
  case ec::schedule_full:
    return "schedule_full";
  case ec::no_responders:
    return "no_responders";
  case ec::request_timeout:
    return "request_timeout";
  case ec::unknown_request:
    return "unknown_request";
  case ec::node_unavailable:
    return "node_unavailable";
  case ec::no_quorum:
    return "no_quorum";
  }
  return "unknown";
}

int grpc_status_code(ec code) noexcept {
  // Numbers as defined by gRPC (google.rpc.Code).
  constexpr int ok = 0, invalid_argument = 3, deadline_exceeded = 4,
                not_found = 5, permission_denied = 7, resource_exhausted = 8,
                failed_precondition = 9, unimplemented = 12, internal = 13,
                unavailable = 14, unauthenticated = 16;
  switch (code) {
  case ec::none:
    return ok;
  case ec::invalid_topic:
  case ec::invalid_pattern:
  case ec::invalid_group_name:
  case ec::message_too_large:
  case ec::invalid_request:
  case ec::invalid_priority:
  case ec::invalid_schedule:
    return invalid_argument;
  case ec::reserved_topic:
  case ec::permission_denied:
    return permission_denied;
  case ec::limit_exceeded:
  case ec::group_full:
  case ec::schedule_full:
    return resource_exhausted;
  case ec::group_pattern_conflict:
    return failed_precondition;
  case ec::unknown_group:
  case ec::unknown_subscription:
    return not_found;
  case ec::unauthenticated:
    return unauthenticated;
  case ec::shutting_down:
    return unavailable;
  case ec::unimplemented:
    return unimplemented;
  case ec::internal:
    return internal;
  case ec::no_responders:
    return unavailable;
  case ec::request_timeout:
    return deadline_exceeded;
  case ec::unknown_request:
    return not_found;
  case ec::node_unavailable:
  case ec::no_quorum:
    return unavailable;
  }
  return internal;
}

} // namespace tb
