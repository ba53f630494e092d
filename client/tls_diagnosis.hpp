// Why a client could not connect to the broker, told apart (issue 26,
// point 8). gRPC 1.51 reports a failed first connection as UNAVAILABLE
// "failed to connect to all addresses; last error: ..." whose tail is one
// of (docs/security.md, "When a TLS connection fails"):
//
//   "Ssl handshake failed: ... certificate verify failed"  the broker's
//       certificate is not trusted by the CA given (or has expired)
//   "Peer name NAME is not in peer certificate"            name mismatch
//   "Ssl handshake failed: ... wrong version number"      TLS client, plain
//       port
//   "Socket closed"                                       a plain client at a
//       TLS port, or the broker refused (or wanted) a client certificate
//   "Failed to connect to remote host: Connection refused"  nothing listens
//
// What the text leaves open, a short TLS handshake of the client's own
// (OpenSSL, the same files) to the same address settles: whether the port
// speaks TLS, why the broker's certificate fails verification, and whether
// the broker closed the connection after the handshake because no client
// certificate was given, or refused the one given (expired, or issued by a
// CA other than the ones the broker names as acceptable).
//
//   auto why = tb::client::diagnose_connect_failure(address, security,
//                                                   status.error_message());
//   if (why.cause != tb::client::connect_cause::unknown)
//     std::cerr << why.sentence << "\n";

#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "client/reach.hpp"
#include "client/security.hpp"

namespace tb::client {

/// The likely cause of a failed connection, as far as the client can tell.
enum class connect_cause {
  /// Nothing more specific is known.
  unknown,
  /// Nothing listens at the address (connection refused).
  refused,
  /// The broker's certificate is not signed by the CA given (or, without a
  /// CA, by one of the system's).
  server_not_trusted,
  /// The broker's certificate has expired or is not valid yet.
  server_cert_expired,
  /// The broker's certificate does not carry the name the client checks.
  name_mismatch,
  /// The broker requires a client certificate and none was given.
  client_cert_required,
  /// The broker refused the client certificate given.
  client_cert_refused,
  /// A TLS client reached a port that does not speak TLS.
  server_not_tls,
  /// A plain-text client reached a port that speaks TLS.
  server_speaks_tls,
};

/// A diagnosis of a failed connection.
struct connect_diagnosis {
  /// The likely cause.
  connect_cause cause = connect_cause::unknown;
  /// The sentence naming the cause and what to do, without the address
  /// (e.g. "the broker requires a client certificate (mutual TLS); give one
  /// with --cert and --key (TINYBROKER_CERT, TINYBROKER_KEY)"); empty when
  /// the cause is unknown.
  std::string sentence;
};

/// Returns the cause that gRPC's status message `message` of a failed
/// connection tells by itself; `unknown` for "Socket closed" and anything
/// else it does not tell (see the list above).
connect_cause classify_grpc_message(std::string_view message);

/// Connects to `address` (`HOST:PORT`) and tries a TLS handshake with the
/// files of `security` (none for a plain-text client: then it only learns
/// whether the port speaks TLS), waiting at most `timeout` for each step;
/// returns what it found (`unknown` when the handshake and the broker's
/// first bytes came through, or the address could not be reached).
connect_diagnosis probe_tls(const std::string& address,
                            const security_options& security,
                            std::chrono::milliseconds timeout);

/// Returns the diagnosis of a failed connection to `address` with
/// `security` from gRPC's status message `grpc_message`, probing with
/// `probe_tls` when the message does not tell the cause or to refine it.
connect_diagnosis diagnose_connect_failure(
    const std::string& address, const security_options& security,
    std::string_view grpc_message,
    std::chrono::milliseconds timeout = std::chrono::seconds(2));

/// Returns gRPC's message on why `channel` cannot connect now (the status
/// message of a short call that does not wait for the connection), or ""
/// when the call got through.
std::string
last_connect_error(const std::shared_ptr<grpc::Channel>& channel,
                   std::chrono::milliseconds timeout = std::chrono::seconds(2));

/// Returns the sentence on why the broker at `server` could not be reached
/// over `channel` (`outcome` is not `connected`), naming the likely cause
/// when it can be told (see `diagnose_connect_failure`), else as
/// `unreachable_message`. It starts "cannot connect to the broker at
/// SERVER".
std::string explain_unreachable(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& server,
                                const security_options& security,
                                reach_outcome outcome,
                                std::chrono::milliseconds timeout);

} // namespace tb::client
