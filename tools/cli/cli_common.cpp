#include "tools/cli/cli_common.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <iostream>

#include <pthread.h>

#include "client/addresses.hpp"
#include "client/check.hpp"
#include "client/reach.hpp"
#include "client/tls_diagnosis.hpp"
#include "config/config_loader.hpp"
#include "tools/cli/json_writer.hpp"
#include "tools/security_flags.hpp"

namespace tb::cli {

namespace {

// The names of the gRPC status codes, by number.
constexpr const char* status_names[] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

// Formats `n` in the largest of `units` (largest first) that divides it.
template <std::size_t N>
std::string format_scaled(uint64_t n, const tb::detail::unit (&units)[N],
                          const char* bare_suffix) {
  for (const auto& u : units)
    if (n != 0 && u.factor > 1 && n % u.factor == 0)
      return std::to_string(n / u.factor) + std::string{u.name};
  return std::to_string(n) + bare_suffix;
}

// Returns what is wrong with `text`, a broker address or several joined by
// commas (issue 30: the nodes of a cluster, tried in order), or "".
std::string check_server_list(const std::string& text) {
  std::vector<std::string> addresses;
  try {
    addresses = client::split_addresses(text);
  } catch (const client::invalid_request& e) {
    return e.what();
  }
  for (auto& address : addresses)
    if (auto problem = check_listen_address(address); !problem.empty())
      return addresses.size() == 1 ? "got \"" + text + "\"; expected " + problem
                                   : "got \"" + address + "\" in \"" + text +
                                         "\"; expected " + problem;
  return {};
}

} // namespace

void add_connection_flags(CLI::App& app, connection_options& opts) {
  opts.server = client::server_from_env();
  opts.server_from_env = true;
  app.add_option_function<std::string>(
         "-s,--server",
         [&opts](const std::string& text) {
           if (auto problem = check_server_list(text); !problem.empty())
             throw CLI::ValidationError("--server", problem);
           opts.server = text;
           opts.server_from_env = false;
         },
         std::string{"broker address HOST:PORT, or several joined by commas "
                     "(the nodes of a cluster: the first that answers is "
                     "used) (env "} +
             client::server_env + "; default " + client::default_server + ")")
      ->type_name("HOST:PORT[,...]")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option_function<std::string>(
         "-t,--timeout",
         [&opts](const std::string& text) {
           opts.timeout = parse_duration_flag("--timeout", text);
           if (opts.timeout.count() == 0)
             throw CLI::ValidationError("--timeout", "must be more than 0");
         },
         "how long to wait for the connection and each answer, e.g. 500ms, "
         "5s, 1m (default 5s)")
      ->type_name("DURATION")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("--json", opts.json,
               "print JSON for scripts (one object per line) instead of text");
  app.add_option_function<std::string>(
         "--name",
         [&opts](const std::string& text) {
           auto status = client::check_client_name(text);
           if (!status.ok())
             throw CLI::ValidationError("--name", status.error_message());
           opts.name = text;
         },
         "the name the broker's stats and log lines show for this client "
         "(default tinybroker-cli; empty sends none)")
      ->type_name("NAME")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  tools::add_security_flags(app, opts.security);
}

client::security_options resolve_security(const connection_options& opts) {
  try {
    return client::resolve_security(opts.security,
                                    client::security_sources_from_env());
  } catch (const client::security_error& e) {
    throw cli_failure(exit_usage, e.what());
  }
}

void set_examples(CLI::App& app, const std::string& examples) {
  app.footer("\nExamples:\n" + examples +
             "Every command also takes --server HOST:PORT, --timeout DURATION, "
             "--json, --name NAME and the token and TLS flags --token, "
             "--token-file, --ca, "
             "--cert, --key (see tinybroker-cli --help).\n");
}

std::unique_ptr<client::connection> connect(const connection_options& opts) {
  if (opts.server_from_env)
    if (auto problem = check_server_list(opts.server); !problem.empty())
      throw cli_failure(exit_usage,
                        std::string{client::server_env} + ": " + problem);
  auto security = resolve_security(opts);
  // Issue 30: several addresses are tried in the order given, each for at
  // most --timeout (a refused one fails at once); the first that answers
  // is used.
  auto addresses = client::split_addresses(opts.server);
  client::connect_any_result found;
  try {
    found = client::connect_any(addresses, security, opts.name, opts.timeout);
  } catch (const client::security_error& e) {
    throw cli_failure(exit_usage, e.what());
  } catch (const client::invalid_request& e) {
    throw cli_failure(exit_usage, e.what());
  }
  if (!found.conn)
    throw cli_failure(
        exit_unreachable,
        client::describe_connect_failures(addresses, found.failures),
        "UNAVAILABLE");
  return std::move(found.conn);
}

bool is_auth_refusal(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         status.error_code() == grpc::StatusCode::PERMISSION_DENIED;
}

int exit_code_for(const grpc::Status& status) {
  switch (status.error_code()) {
  case grpc::StatusCode::OK:
    return exit_ok;
  case grpc::StatusCode::UNAVAILABLE:
  case grpc::StatusCode::DEADLINE_EXCEEDED:
    return exit_unreachable;
  default:
    return exit_refused;
  }
}

std::string status_code_name(int code) {
  constexpr int count = sizeof(status_names) / sizeof(status_names[0]);
  if (code < 0 || code >= count)
    return "code " + std::to_string(code);
  return status_names[code];
}

std::string describe(const grpc::Status& status) {
  return status_code_name(static_cast<int>(status.error_code())) + ": " +
         status.error_message();
}

std::string describe(const tinybroker::v1::Error& error) {
  auto text = status_code_name(error.code());
  if (!error.reason().empty())
    text += " (" + error.reason() + ")";
  return text + ": " + error.message();
}

void require_utf8(const std::string& what, const std::string& value) {
  auto status = client::check_utf8(what, value);
  if (!status.ok())
    throw cli_failure(exit_usage, status.error_message() +
                                      "; topics, patterns, names, keys and "
                                      "headers must be UTF-8 text");
}

void check_status(const grpc::Status& status, const std::string& what) {
  if (!status.ok())
    throw cli_failure(exit_code_for(status),
                      what + " failed: " + describe(status),
                      status_code_name(static_cast<int>(status.error_code())));
}

std::string format_duration(uint64_t ms) {
  return format_scaled(ms, tb::detail::time_units, "ms");
}

std::string format_size(uint64_t bytes) {
  return format_scaled(bytes, tb::detail::size_units, "");
}

std::chrono::milliseconds parse_duration_flag(const std::string& flag,
                                              const std::string& text) {
  auto value = parse_flag_duration(text);
  if (!value)
    throw CLI::ValidationError(bad_flag_duration(flag, text));
  return *value;
}

std::string json_error(const std::string& code, const std::string& message) {
  json_writer out;
  out.open_object().open_object("error");
  out.text("code", code).text("message", message);
  out.close_object().close_object();
  return out.str();
}

stop_signals::stop_signals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

bool stop_signals::wait_until(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero())
      return pending();
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left);
    timespec wait{static_cast<time_t>(ns.count() / 1'000'000'000),
                  static_cast<long>(ns.count() % 1'000'000'000)};
    auto taken = sigtimedwait(&set_, nullptr, &wait);
    if (taken > 0) {
      name_ = taken == SIGINT ? "SIGINT" : "SIGTERM";
      return true;
    }
    if (errno != EINTR && errno != EAGAIN)
      return false;
  }
}

bool stop_signals::pending() {
  timespec zero{0, 0};
  auto taken = sigtimedwait(&set_, nullptr, &zero);
  if (taken <= 0)
    return false;
  name_ = taken == SIGINT ? "SIGINT" : "SIGTERM";
  return true;
}

void stop_signals::unblock_in_child() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

std::unique_ptr<client::connection>
connect_unless_stopped(const connection_options& opts, stop_signals& stop) {
  try {
    return connect(opts);
  } catch (const cli_failure& failure) {
    if (failure.code() != exit_unreachable || !stop.pending())
      throw;
    std::cerr << "tinybroker-cli: stopped by " << stop.name()
              << " before a connection was made" << std::endl;
    return nullptr;
  }
}

void stream_lost(const client::session& session) {
  auto status = session.status();
  if (status.ok())
    throw cli_failure(exit_unreachable, "the broker ended the stream");
  auto name = status_code_name(static_cast<int>(status.error_code()));
  if (is_auth_refusal(status))
    throw cli_failure(exit_refused, "refused: " + describe(status), name);
  throw cli_failure(exit_unreachable, "connection lost: " + describe(status),
                    name);
}

bool wait_subscribed(client::session& session, const std::string& pattern,
                     const connection_options& opts, stop_signals& stop) {
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + opts.timeout;
  for (;;) {
    if (stop.pending())
      return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - clock::now());
    if (left.count() <= 0)
      throw cli_failure(exit_unreachable,
                        "no answer to the subscribe within " +
                            format_duration(opts.timeout.count()));
    auto frame = session.next(std::min(left, stop_check_interval));
    if (!frame) {
      if (session.ended())
        stream_lost(session);
      continue;
    }
    if (frame->has_subscribed())
      return true;
    if (frame->has_error() &&
        frame->error().request_id() == subscribe_request_id)
      throw cli_failure(exit_refused,
                        "subscribe to \"" + pattern +
                            "\" refused: " + describe(frame->error().error()),
                        status_code_name(frame->error().error().code()));
  }
}

int stopped(client::session& session, const stop_signals& stop,
            const connection_options& opts, const char* done, uint64_t count,
            uint64_t wanted) {
  session.close(opts.timeout);
  if (wanted > count)
    throw cli_failure(exit_idle,
                      std::string{"stopped by "} + stop.name() + ": " + done +
                          " " + std::to_string(count) + " of --count " +
                          std::to_string(wanted),
                      "CANCELLED");
  std::cerr << "tinybroker-cli: stopped by " << stop.name() << "; " << done
            << " " << count << std::endl;
  return exit_ok;
}

} // namespace tb::cli
