// What every C++ example does before its own work, kept out of the way:
// `--help`, `--version`, `--server` (default TINYBROKER_SERVER, else
// 127.0.0.1:7400), the token and TLS variables (TINYBROKER_TOKEN,
// TINYBROKER_CA, ...; docs/client.md, "Security"), and failing at once,
// with exit code 3, when no broker answers at the address (reach_broker).

#pragma once

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "client/async_client.hpp"
#include "client/grpc_log.hpp"
#include "client/reach.hpp"
#include "client/tls_diagnosis.hpp"

namespace example {

/// Starts an error line on standard error with the program's `name`, as
/// every tinybroker program does.
inline std::ostream& error(const char* name) {
  return std::cerr << name << ": ";
}

/// The broker's address and the arguments after it.
struct command_line {
  /// `--server HOST:PORT`, else TINYBROKER_SERVER, else 127.0.0.1:7400.
  std::string server;
  /// The arguments that follow the options.
  std::vector<std::string> args;
};

/// Parses the leading options of `argv` for program `name`: `--help` (or
/// `-h`) prints `usage` on standard output and exits 0, `--version` prints
/// the version and exits 0, `--server HOST:PORT` picks the broker. Routes
/// gRPC's log lines through the program's error output first.
inline command_line parse_command_line(int argc, char** argv, const char* name,
                                       const std::string& usage) {
  tb::client::route_grpc_log(name);
  command_line result{tb::client::server_from_env(), {}};
  std::vector<std::string> args(argv + 1, argv + argc);
  for (auto& arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::cout << usage;
      std::exit(0);
    }
    if (arg == "--version") {
      std::cout << name << " " << TINYBROKER_VERSION << "\n";
      std::exit(0);
    }
  }
  if (args.size() >= 2 && args[0] == "--server") {
    result.server = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  result.args = std::move(args);
  return result;
}

/// Returns the client's settings with the token and TLS files of the
/// TINYBROKER_* variables; exits with 2 (naming `name`) if they cannot be
/// used.
inline tb::client::client_options options_from_env(const char* name) {
  tb::client::client_options options;
  try {
    options.security = tb::client::security_from_env();
    tb::client::make_channel_credentials(options.security); // reads the files
  } catch (const tb::client::security_error& e) {
    std::cerr << name << ": " << e.what() << "\n";
    std::exit(2);
  }
  return options;
}

/// Waits up to 10 s for the broker at `server` to accept a connection with
/// `options`; returns false (the example then exits with 3) after printing
/// why, at once when nothing listens there. Called before the async client
/// is made, so that a missing broker costs no reconnect attempts.
inline bool reach_broker(const std::string& server,
                         const tb::client::client_options& options,
                         const char* name) {
  using namespace std::chrono_literals;
  tb::client::connection probe{server, options.security};
  auto reached = tb::client::wait_reachable(*probe.channel(), 10s);
  if (reached == tb::client::reach_outcome::connected)
    return true;
  std::cerr << name << ": "
            << tb::client::explain_unreachable(probe.channel(), server,
                                               options.security, reached, 10s)
            << "\n";
  return false;
}

} // namespace example
