// What every tinybroker-cli subcommand shares: the connection flags, the
// exit codes, the failure that ends a command, connecting to the broker; and
// the subcommands themselves, each adding itself to the top-level app
// (tools/cli/cmd_*.cpp).

#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <csignal>

#include <CLI/CLI.hpp>

#include "client/connection.hpp"

namespace tb::cli {

/// The exit codes of tinybroker-cli (docs/cli.md lists them).
enum exit_code : int {
  /// Everything asked for was done.
  exit_ok = 0,
  /// The broker refused a request (an error frame, a refused message, a
  /// failed call) or ended a subscription; or another runtime failure.
  exit_refused = 1,
  /// The command line is wrong: unknown flag, bad value, missing argument.
  exit_usage = 2,
  /// The broker cannot be reached, did not answer within `--timeout`, or
  /// the connection was lost.
  exit_unreachable = 3,
  /// `sub --idle-timeout` passed without a delivery before `--count`
  /// deliveries were printed.
  exit_idle = 4,
};

/// How to reach the broker and how to print; set by the shared flags.
/// The security flags (token, TLS) are applied in `connect()`, so every
/// subcommand gets them.
struct connection_options {
  /// The broker's address, `HOST:PORT`: `--server`, else TINYBROKER_SERVER,
  /// else the broker's default listen address.
  std::string server;
  /// True while `server` comes from TINYBROKER_SERVER or the default, not
  /// from `--server` (so a bad value is blamed on the variable).
  bool server_from_env = false;
  /// How long to wait for the connection and for each answer.
  std::chrono::milliseconds timeout{5000};
  /// Print JSON (one object per line) instead of text for people.
  bool json = false;
  /// The name this client gives itself in the broker's Stats and log lines
  /// (`--name`).
  std::string name = "tinybroker-cli";
  /// The security flags as given (`--token`, `--token-file`, `--ca`,
  /// `--cert`, `--key`, `--tls-server-name`); each beats its TINYBROKER_*
  /// environment variable (see `resolve_security`).
  client::security_sources security;
};

/// A failure that ends the command: `what()` is printed on stderr, `code`
/// is the process exit code.
class cli_failure : public std::runtime_error {
public:
  /// Creates a failure with exit code `code` and message `message`;
  /// `status` names it in JSON (a gRPC status code name; by default
  /// INVALID_ARGUMENT for usage errors, UNAVAILABLE for an unreachable
  /// broker and UNKNOWN otherwise).
  cli_failure(int code, const std::string& message, std::string status = {})
      : std::runtime_error(message), code_(code), status_(std::move(status)) {
    if (status_.empty())
      status_ = code == exit_usage         ? "INVALID_ARGUMENT"
                : code == exit_unreachable ? "UNAVAILABLE"
                                           : "UNKNOWN";
  }

  /// Returns the exit code.
  int code() const noexcept {
    return code_;
  }

  /// Returns the gRPC status code name that stands for the failure.
  const std::string& status() const noexcept {
    return status_;
  }

private:
  int code_;
  std::string status_;
};

/// One subcommand: its CLI11 app and what runs it once it was chosen.
struct command {
  /// The subcommand's parser; `parsed()` tells whether it was chosen.
  CLI::App* app;
  /// Runs the command and returns its exit code; may throw `cli_failure`.
  std::function<int()> run;
};

/// Adds `--server`, `--timeout`, `--json`, `--name` and the security flags
/// to `app`, storing into `opts`.
void add_connection_flags(CLI::App& app, connection_options& opts);

/// Returns the security settings of the flags in `opts` and the TINYBROKER_*
/// environment variables (a flag beats its variable), with the token file
/// read; throws a `cli_failure` with `exit_usage` if they cannot be used.
client::security_options resolve_security(const connection_options& opts);

/// Sets the footer of `app` to an example section listing `examples`.
void set_examples(CLI::App& app, const std::string& examples);

/// Connects to the broker with the security settings of `opts`, waiting at
/// most `opts.timeout`; throws a `cli_failure` with `exit_usage` if those
/// settings cannot be used, or with `exit_unreachable` if it cannot connect.
std::unique_ptr<client::connection> connect(const connection_options& opts);

/// Returns true for the statuses of a broker that refused the client's
/// credentials or permissions: UNAUTHENTICATED and PERMISSION_DENIED.
bool is_auth_refusal(const grpc::Status& status);

/// Returns the exit code for a failed call's status: `exit_unreachable` for
/// UNAVAILABLE and DEADLINE_EXCEEDED, `exit_refused` otherwise.
int exit_code_for(const grpc::Status& status);

/// Returns the name of gRPC status code number `code`, e.g. "NOT_FOUND".
std::string status_code_name(int code);

/// Returns "CODE: message" for a failed call's status.
std::string describe(const grpc::Status& status);

/// Returns "CODE (reason): message" for a refusal the broker sent.
std::string describe(const tinybroker::v1::Error& error);

/// Throws a `cli_failure` with `exit_usage` if `value`, named `what` in the
/// message (e.g. "topic"), is not UTF-8: the broker takes only UTF-8 names,
/// so nothing is sent.
void require_utf8(const std::string& what, const std::string& value);

/// Throws a `cli_failure` saying `what` failed if `status` is not OK.
void check_status(const grpc::Status& status, const std::string& what);

/// Formats milliseconds the way the config writes them: "30s", "250ms".
std::string format_duration(uint64_t ms);

/// Formats bytes the way the config writes them: "1GiB", "64KiB", "1000".
std::string format_size(uint64_t bytes);

/// Parses a duration flag ("500ms", "30s", "2m"; a bare number only as
/// "0"); throws `CLI::ValidationError` naming `flag` for anything else.
std::chrono::milliseconds parse_duration_flag(const std::string& flag,
                                              const std::string& text);

/// Returns the one-line JSON object of an error for `--json`:
/// `{"error":{"code":"UNAVAILABLE","message":"..."}}`.
std::string json_error(const std::string& code, const std::string& message);

/// Adds `health`: the standard gRPC health check (SERVING or NOT_SERVING).
command add_health_command(CLI::App& app, const connection_options& opts);

/// Adds `info`: the broker's version, addresses, limits and security
/// (the Info call).
command add_info_command(CLI::App& app, const connection_options& opts);

/// Adds `cluster` (the cluster section of Stats: nodes and link states).
command add_cluster_command(CLI::App& app, const connection_options& opts);

/// Adds `pub`: publish messages with confirm and print their ids.
command add_pub_command(CLI::App& app, const connection_options& opts);

/// Ctrl-C (SIGINT) and SIGTERM for the commands that run until
/// interrupted (`sub`, `reply`, `stats --watch`): blocked in the calling
/// thread, and so in every thread it starts later (gRPC's), then taken when
/// the command looks, so that it can end its stream cleanly and exit 0. Make
/// one before connect(). The mask is never restored: a signal still pending
/// would then end the process.
class stop_signals {
public:
  /// Blocks SIGINT and SIGTERM in the calling thread.
  stop_signals();

  /// Waits until `deadline`; returns true if a stop signal came first.
  bool wait_until(std::chrono::steady_clock::time_point deadline);

  /// Returns true if a stop signal is pending (and takes it).
  bool pending();

  /// Returns the name of the last signal taken ("SIGINT" or "SIGTERM").
  const char* name() const {
    return name_;
  }

  /// Unblocks both signals in a child process between fork and exec, so
  /// that the program it runs can be interrupted as usual.
  static void unblock_in_child();

private:
  sigset_t set_;
  const char* name_ = "";
};

/// Connects as `connect` does; null (after a line on standard error) if
/// the broker could not be reached and a stop signal came while waiting
/// for it: the command then exits 0.
std::unique_ptr<client::connection>
connect_unless_stopped(const connection_options& opts, stop_signals& stop);

/// The request id of the subscribe (or join) that `sub` and `reply` send.
constexpr uint64_t subscribe_request_id = 1;

/// Throws the failure for a Session stream the broker ended: refused
/// (exit 1) for an auth refusal, else unreachable (exit 3).
[[noreturn]] void stream_lost(const client::session& session);

/// Waits for the broker's answer to the subscribe (or join) to `pattern`
/// that `session` sent with `subscribe_request_id`; false if a stop signal came
/// first. Throws if it was refused, the stream ended, or no answer came
/// within `opts.timeout`.
bool wait_subscribed(client::session& session, const std::string& pattern,
                     const connection_options& opts, stop_signals& stop);

/// How often `sub` and `reply` look for Ctrl-C or SIGTERM while they wait
/// for a frame.
constexpr std::chrono::milliseconds stop_check_interval{100};

/// Ends `session` after a stop signal: half-closes it, so that the answers
/// already sent reach the broker, and waits up to `opts.timeout` for the
/// broker to end it. Then says on standard error which signal and how many
/// `done` (e.g. "printed 3") and returns `exit_ok`; or, if `wanted` (a
/// `--count`) is above `count`, throws an `exit_idle` failure saying how
/// many of it were done.
int stopped(client::session& session, const stop_signals& stop,
            const connection_options& opts, const char* done, uint64_t count,
            uint64_t wanted);

/// Adds `sub`: subscribe (fan-out or as a group member) and print
/// deliveries.
command add_sub_command(CLI::App& app, const connection_options& opts);

/// Adds `request` and `reply`: request/reply from the shell
/// (tools/cli/cmd_request.cpp).
std::vector<command> add_request_commands(CLI::App& app,
                                          const connection_options& opts);

/// Adds `groups` with `ls`, `create` and `delete`.
std::vector<command> add_groups_commands(CLI::App& app,
                                         const connection_options& opts);

/// Adds `stats`: the broker's counters once, as JSON, or refreshed with
/// rates (`--watch`).
command add_stats_command(CLI::App& app, const connection_options& opts);

/// Adds `bench`: runs tinybroker-bench from the same directory.
command add_bench_command(CLI::App& app, const connection_options& opts);

} // namespace tb::cli
