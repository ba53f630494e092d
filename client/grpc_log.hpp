// Where gRPC's own log lines go in the tinybroker client programs
// (tinybroker-cli, tinybroker-bench, the examples): through the program's
// error output, never as gRPC's raw lines (`E1204 12:00:00.000 ...
// ssl_transport_security.cc:1501] Handshake failed ...`).
//
//   int main(int argc, char** argv) {
//     tb::client::route_grpc_log("tinybroker-cli");
//
// A failed TLS handshake or channel set-up is then told once, by the
// program's own error (client/tls_diagnosis.hpp names the cause), and the
// lines gRPC writes about it are dropped. Any other gRPC error line is
// written as "PROGRAM: grpc: MESSAGE". With GRPC_VERBOSITY set (DEBUG,
// INFO, ERROR), every line gRPC writes at that level is shown, the same
// way: the setting for looking into gRPC itself (docs/client.md).

#pragma once

#include <string>
#include <string_view>

namespace tb::client {

/// Routes gRPC's log lines to standard error as "PROGRAM: grpc: MESSAGE"
/// (`program` names the program) and drops the handshake and channel
/// set-up lines that the program's own error explains, unless
/// GRPC_VERBOSITY is set. Call it first in main(); later calls change the
/// name.
void route_grpc_log(const std::string& program);

/// Returns true if gRPC's log line `message` (from source file `file`) is
/// one that the client's own connection error explains: a failed TLS
/// handshake, a peer name check, or a channel that could not be set up.
bool explained_by_client(std::string_view file, std::string_view message);

} // namespace tb::client
