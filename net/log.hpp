// The broker's logger (log/log.hpp) plus what only the gRPC side needs:
// gRPC's own log lines sent through it.

#pragma once

#include "log/log.hpp"

namespace tb::log {

/// Sends gRPC's own log lines through `write`, prefixed `grpc: `, at the
/// level set by `set_grpc_level` (warn unless changed). Failed TLS
/// handshakes are rate limited: at most 5 lines in 10 s, then one line
/// `N more failed TLS handshakes suppressed in the last 10 s` with the next
/// failure. Call once, before gRPC logs anything worth keeping.
void capture_grpc_logs();

/// Sets the level gRPC's log lines are written at: the broker lowers them to
/// debug while it starts to listen, since it explains a failed bind itself.
void set_grpc_level(level lvl);

} // namespace tb::log
