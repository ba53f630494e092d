// The broker program: command line, config, signals. `tinybroker` is this
// and nothing else; a program that registers its own group policies calls
// it after registering them (see examples/custom_policy).

#include "net/broker_main.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <pthread.h>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "actors/policies/policy_registry.hpp"
#include "config/config_loader.hpp"
#include "config/problem_lines.hpp"
#include "net/listen_check.hpp"
#include "net/log.hpp"
#include "net/server.hpp"
#include "net/systemd_notify.hpp"
#include "net/tls_credentials.hpp"
#include "net/tls_store.hpp"

#ifndef TINYBROKER_VERSION
#error "TINYBROKER_VERSION must be defined by the build"
#endif

namespace {

// Blocks SIGINT, SIGTERM and SIGHUP in every thread started from now on,
// so that only sigwait() below sees them.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Logs a warning if the server certificate `path` has expired or expires
// within two weeks (spec 10): at start and after each reload.
void warn_if_expiring(const std::string& path, int64_t not_after) {
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  if (auto warning = tb::tls_expiry_warning(path, not_after, now);
      !warning.empty())
    tb::log::warn(warning);
}

// Reloads the tokens and the TLS files from `config_file` on SIGHUP
// (docs/security.md): only `[auth]` and `[tls]` take effect; a config that
// does not load changes nothing, and each of its problems is logged as a
// line of its own.
void reload_config(tb::broker_server& server, const std::string& config_file,
                   const tb::policy_names& policies) {
  if (config_file.empty()) {
    tb::log::warn("received SIGHUP, but the broker runs on its built-in "
                  "defaults (no --config): nothing to reload");
    return;
  }
  tb::log::info("received SIGHUP, reloading the tokens and the TLS files of " +
                config_file);
  auto loaded = tb::load_config_file(config_file, policies);
  if (!loaded.ok()) {
    for (const auto& line : tb::problem_lines(loaded.error()))
      tb::log::error("reload failed, the tokens and the TLS files stay as "
                     "they were: " +
                     line);
    return;
  }
  const auto& cfg = loaded.value();
  if (auto err = server.reload_auth(cfg.auth))
    tb::log::error("reload failed: " + err.text);
  if (!cfg.tls.enabled() && server.tls_not_after() == 0)
    return;
  if (auto err = server.reload_tls(cfg.tls)) {
    tb::log::error("TLS reload failed, the listeners keep the certificate "
                   "they had: " +
                   err.text);
  } else {
    tb::log::info("TLS files reloaded",
                  {{"cert", cfg.tls.cert},
                   {"not_after", tb::utc_timestamp(server.tls_not_after())},
                   {"client_ca", cfg.tls.client_ca}});
  }
  warn_if_expiring(server.tls_cert(), server.tls_not_after());
}

} // namespace

// jemalloc's options for every broker program (read at its start; the
// MALLOC_CONF variable still overrides them). Freed pages go back to the
// system after 1 s instead of jemalloc's 10 s: a burst of drops (a stopped
// peer's link, a slow subscriber) frees millions of messages a second,
// which otherwise stay resident for 10 s above the buffers' bounds
// (docs/cluster.md, "Figures"). S1 and S3 in bulk did not move (b/a 1.005
// and 0.976, docs/performance.md). Ignored without jemalloc.
extern "C" {
/// jemalloc's compiled-in options string (see `man jemalloc`).
const char* malloc_conf = "dirty_decay_ms:1000,muzzy_decay_ms:0";
}

namespace {

// Names the malloc this process runs on: jemalloc (with its version) when
// the build linked it, else glibc's.
std::string allocator_name() {
  using mallctl_fn = int (*)(const char*, void*, size_t*, void*, size_t);
  auto* mallctl = reinterpret_cast<mallctl_fn>(dlsym(RTLD_DEFAULT, "mallctl"));
  if (mallctl == nullptr)
    return "glibc malloc";
  const char* version = nullptr;
  size_t size = sizeof(version);
  if (mallctl("version", &version, &size, nullptr, 0) != 0 ||
      version == nullptr)
    return "jemalloc";
  auto name = std::string{"jemalloc "} + version;
  // How long freed pages stay resident (malloc_conf above, or MALLOC_CONF).
  ssize_t decay_ms = 0;
  size = sizeof(decay_ms);
  if (mallctl("opt.dirty_decay_ms", &decay_ms, &size, nullptr, 0) == 0)
    name += ", freed pages returned after " + std::to_string(decay_ms) + " ms";
  return name;
}

// Ends the process with status 0 at `deadline` if it still runs then: spec 9
// bounds the shutdown whatever the clients do, so a stop that hangs (a bug)
// must not hang a supervisor's stop too. Nothing of the process's state is
// touched: the logger may already be gone when this fires.
void arm_exit_watchdog(std::chrono::steady_clock::time_point deadline) {
  std::thread([deadline] {
    std::this_thread::sleep_until(deadline);
    tb::log::write_raw(tb::log::level::warn,
                       "shutdown took longer than shutdown_grace + 1s; "
                       "exiting now");
    std::_Exit(0);
  }).detach();
}

// Logs each line of the config summary as a line of its own: every log
// line is one event, so that a log shipper never sees half a summary.
void log_config(const std::string& summary) {
  std::string::size_type begin = 0;
  while (begin <= summary.size()) {
    auto end = summary.find('\n', begin);
    if (end == std::string::npos)
      end = summary.size();
    if (end > begin)
      tb::log::info(std::string_view{summary}.substr(begin, end - begin));
    begin = end + 1;
  }
}

} // namespace

namespace tb {

int run_broker(int argc, char** argv, const std::string& program) {
  CLI::App app{program +
               ": an in-memory message broker with consumer groups, "
               "wildcard topics and confirmable receipt, over gRPC.\n"
               "Starts on built-in defaults (127.0.0.1:7400) unless a config "
               "file is given."};
  std::string config_file;
  std::string check_file;
  std::string listen;
  std::string metrics_listen;
  app.add_option("-c,--config", config_file, "TOML config file");
  app.add_option("--check-config", check_file,
                 "only check the TOML config FILE: print the effective "
                 "config and exit 0, or list every problem and exit 2")
      ->type_name("FILE")
      ->excludes("--config");
  app.add_option("-l,--listen", listen,
                 "listen address HOST:PORT (overrides the config; port 0 "
                 "picks a free port)");
  app.add_option("--metrics-listen", metrics_listen,
                 "Prometheus metrics address HOST:PORT, or \"off\" "
                 "(overrides the config; default 127.0.0.1:7401)")
      ->type_name("ADDR");
  std::string log_level;
  std::string log_format;
  app.add_option("--log-level", log_level,
                 "lowest level logged: trace, debug, info, warn, error or "
                 "off (overrides the config)")
      ->type_name("LEVEL");
  app.add_option("--log-format", log_format,
                 "how log lines are written: text, or json (one JSON object "
                 "per line; overrides the config)")
      ->type_name("FORMAT");
  std::string grpc_transport;
  app.add_option("--grpc-transport", grpc_transport,
                 "how Session streams are served: cq (a completion queue and "
                 "the broker's own polling thread) or callback (gRPC's "
                 "callback API; overrides [grpc] transport)")
      ->type_name("TRANSPORT");
  app.set_version_flag("--version", program + " " + TINYBROKER_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e); // --help, --version
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\nRun with --help for the options.\n",
                 program.c_str(), e.what());
    return 2;
  }

  const policy_names policies{
      [](const std::string& x) { return policy_registry::contains(x); },
      policy_registry::names_text()};
  auto checking = !check_file.empty();
  if (checking)
    config_file = check_file;
  auto loaded = config_file.empty() ? load_result{broker_config{}}
                                    : load_config_file(config_file, policies);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(),
                 loaded.error().text.c_str());
    return 2;
  }
  auto cfg = std::move(loaded).value();
  if (!listen.empty()) {
    if (auto problem = check_listen_address(listen); !problem.empty()) {
      std::fprintf(stderr, "%s: --listen: got \"%s\"; expected %s\n",
                   program.c_str(), listen.c_str(), problem.c_str());
      return 2;
    }
    cfg.listen = listen;
  }
  if (app.count("--metrics-listen") != 0 &&
      !parse_metrics_listen(metrics_listen, cfg.metrics.listen)) {
    std::fprintf(stderr, "%s: --metrics-listen: got \"%s\"; expected %s\n",
                 program.c_str(), metrics_listen.c_str(),
                 std::string(metrics_listen_expected).c_str());
    return 2;
  }
  log::level lvl = log::level::info;
  if (!log_level.empty()) {
    if (!log::parse_level(log_level, lvl)) {
      std::fprintf(stderr,
                   "%s: --log-level: got \"%s\"; expected trace, debug, "
                   "info, warn, error or off\n",
                   program.c_str(), log_level.c_str());
      return 2;
    }
    cfg.log_level = log_level;
  }
  log::format fmt = log::format::text;
  if (!log_format.empty()) {
    if (!log::parse_format(log_format, fmt)) {
      std::fprintf(stderr,
                   "%s: --log-format: got \"%s\"; expected text or json\n",
                   program.c_str(), log_format.c_str());
      return 2;
    }
    cfg.log_format = log_format;
  }
  if (!grpc_transport.empty()) {
    if (grpc_transport != "cq" && grpc_transport != "callback") {
      std::fprintf(stderr,
                   "%s: --grpc-transport: got \"%s\"; expected cq or "
                   "callback\n",
                   program.c_str(), grpc_transport.c_str());
      return 2;
    }
    cfg.grpc_transport = grpc_transport;
  }
  // The [tls] files are part of the config: a bad one is a config error.
  if (auto problem = check_tls_files(cfg.tls); !problem.empty()) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), problem.c_str());
    return 2;
  }
  if (checking) {
    std::printf("%s\n%s: the config is valid\n", describe(cfg).c_str(),
                check_file.c_str());
    return 0;
  }
  // The loader accepted only valid names, and the flags were checked above.
  log::parse_level(cfg.log_level, lvl);
  log::set_level(lvl);
  log::parse_format(cfg.log_format, fmt);
  log::set_format(fmt);
  // Under systemd the journal stamps each line itself (docs/operations.md).
  log::set_journal_prefixes(log::stderr_is_journal());

  log::capture_grpc_logs();
  auto signals = block_stop_signals();
  log_config(describe(cfg));
  log::info("memory allocator: " + allocator_name());
  for (const auto& warning : exposure_warnings(cfg))
    log::warn(warning);
  broker_server server{cfg};
  if (auto err = server.start()) {
    log::error(err.text);
    return 1;
  }
  log::info(program + " " + TINYBROKER_VERSION + " listening on " +
            server.address() + " (config: " + cfg.source + "); metrics " +
            (server.metrics_address().empty()
                 ? std::string{"off"}
                 : std::string{"on "} + (cfg.metrics.tls ? "https" : "http") +
                       "://" + server.metrics_address() + "/metrics") +
            (server.metrics_address().empty() || !cfg.console.enabled
                 ? std::string{}
                 : std::string{"; console on "} +
                       (cfg.metrics.tls ? "https" : "http") + "://" +
                       server.metrics_address() + "/"));
  if (cfg.tls.enabled())
    warn_if_expiring(server.tls_cert(), server.tls_not_after());
  notify_ready("listening on " + server.address());
  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP)
    notify_reloading([&] { reload_config(server, config_file, policies); });
  notify_stopping();
  // The process ends by grace + 1 s; leave teardown a tenth of that.
  arm_exit_watchdog(std::chrono::steady_clock::now() + cfg.shutdown_grace +
                    std::chrono::milliseconds(900));
  log::info(std::string{"received "} + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
            ", shutting down");
  server.stop();
  log::info("stopped");
  if (server.abandoned())
    std::_Exit(0); // destructors would wait for the stalled clients
  return 0;
}

} // namespace tb
