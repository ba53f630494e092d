// Where a client finds the broker (TINYBROKER_SERVER, else the broker's
// default address) and how it tells at once that nothing answers there:
// the tools and examples fail within a second against a closed port instead
// of waiting out their whole timeout (docs/cli.md, "Exit codes").

#pragma once

#include <chrono>
#include <cstdlib>
#include <string>

#include <grpcpp/grpcpp.h>

namespace tb::client {

/// The environment variable naming the broker's address (`HOST:PORT`, or
/// several joined by commas: see client/addresses.hpp).
inline constexpr const char* server_env = "TINYBROKER_SERVER";

/// The broker's default listen address, which clients use when neither a
/// flag nor TINYBROKER_SERVER names one.
inline constexpr const char* default_server = "127.0.0.1:7400";

/// Returns the address in TINYBROKER_SERVER when it is set and not empty,
/// else `default_server`. A `--server` flag beats both.
inline std::string server_from_env() {
  const char* value = std::getenv(server_env);
  return value != nullptr && *value != '\0' ? std::string{value}
                                            : std::string{default_server};
}

/// How long one connection attempt (TCP connect, TLS and HTTP/2
/// handshakes) may take before it is abandoned and a new one made: 2 s, as
/// NATS's clients do. gRPC's own default is 20 s, all of which a connect
/// whose SYN was lost would cost. Every channel `make_channel` makes has it
/// unless its arguments set `GRPC_ARG_MIN_RECONNECT_BACKOFF_MS` already.
inline constexpr std::chrono::milliseconds connect_attempt_timeout{2000};

/// How waiting for a channel to connect ended.
enum class reach_outcome {
  /// The channel is connected (READY).
  connected,
  /// The connection failed: nothing listens there, the host is unknown, or
  /// the TLS handshake failed (TRANSIENT_FAILURE).
  failed,
  /// Still connecting when the time was up: the address may be reachable
  /// but slow, or packets are dropped.
  timed_out,
};

/// Connects `channel` and waits until it is READY, it fails (a refused
/// connection fails within milliseconds) or `timeout` passed. A broker that
/// accepts the connection but is slow to answer is waited for, up to
/// `timeout`, and so is an attempt that got no answer at all: one that
/// failed only when `connect_attempt_timeout` was up is followed by another.
inline reach_outcome wait_reachable(grpc::Channel& channel,
                                    std::chrono::milliseconds timeout) {
  using clock = std::chrono::system_clock;
  // A failure this long after the attempt began is its timeout, not a
  // refusal (gRPC's timers may fire a little early or late).
  constexpr auto timed_out_attempt = connect_attempt_timeout * 9 / 10;
  auto deadline = clock::now() + timeout;
  auto attempt_began = clock::now();
  auto state = channel.GetState(true);
  while (state != GRPC_CHANNEL_READY) {
    if (state == GRPC_CHANNEL_SHUTDOWN ||
        (state == GRPC_CHANNEL_TRANSIENT_FAILURE &&
         clock::now() - attempt_began < timed_out_attempt))
      return reach_outcome::failed;
    if (!channel.WaitForStateChange(state, deadline))
      return reach_outcome::timed_out;
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE)
      attempt_began = clock::now();
    state = channel.GetState(true);
  }
  return reach_outcome::connected;
}

/// Returns a sentence on why the broker at `server` could not be reached
/// (`outcome` is not `connected`), waiting at most `timeout`, over TLS when
/// `tls`; it starts "cannot connect to the broker at SERVER".
inline std::string unreachable_message(const std::string& server,
                                       reach_outcome outcome,
                                       std::chrono::milliseconds timeout,
                                       bool tls) {
  std::string text = "cannot connect to the broker at " + server;
  if (tls)
    text += " over TLS";
  if (outcome == reach_outcome::failed)
    text += tls ? ": the connection or the TLS handshake failed"
                : ": the connection failed";
  else
    text += " within " + (timeout.count() % 1000 == 0
                              ? std::to_string(timeout.count() / 1000) + "s"
                              : std::to_string(timeout.count()) + "ms");
  return text + (tls ? "; is tinybroker running there with TLS? (check the "
                       "address, the CA, the client certificate and the TLS "
                       "server name)"
                     : "; is tinybroker running there? (check --server or "
                       "TINYBROKER_SERVER; if it speaks TLS, give a CA)");
}

} // namespace tb::client
