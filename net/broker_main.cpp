// The broker program: command line, config, signals. `tinybroker` is this
// and nothing else; a program that registers its own group policies calls
// it after registering them (see examples/custom_policy).

#include "net/broker_main.hpp"

#include <csignal>
#include <cstdio>
#include <pthread.h>

#include <CLI/CLI.hpp>

#include "config/config_loader.hpp"
#include "net/log.hpp"
#include "net/server.hpp"

#ifndef TINYBROKER_VERSION
#error "TINYBROKER_VERSION must be defined by the build"
#endif

namespace {

// Blocks SIGINT and SIGTERM in every thread started from now on, so that
// only sigwait() below sees them.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
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
  std::string listen;
  app.add_option("-c,--config", config_file, "TOML config file")
      ->check(CLI::ExistingFile);
  app.add_option("-l,--listen", listen,
                 "listen address HOST:PORT (overrides the config; port 0 "
                 "picks a free port)");
  app.set_version_flag("--version", program + " " + TINYBROKER_VERSION);
  CLI11_PARSE(app, argc, argv);

  auto loaded = config_file.empty() ? load_result{broker_config{}}
                                    : load_config_file(config_file);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(),
                 loaded.error().text.c_str());
    return 2;
  }
  auto cfg = std::move(loaded).value();
  if (!listen.empty()) {
    if (auto problem = check_listen_address(listen); !problem.empty()) {
      std::fprintf(stderr, "%s: --listen: %s\n", program.c_str(),
                   problem.c_str());
      return 2;
    }
    cfg.listen = listen;
  }
  log::level lvl = log::level::info;
  log::parse_level(cfg.log_level, lvl);
  log::set_level(lvl);

  auto signals = block_stop_signals();
  broker_server server{cfg};
  if (auto err = server.start()) {
    log::error(err.text);
    return 1;
  }
  log::info(describe(cfg));
  log::info(program + " " + TINYBROKER_VERSION + " listening on " +
            server.address() + " (config: " + cfg.source + ")");
  int sig = 0;
  sigwait(&signals, &sig);
  log::info(std::string{"received "} + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
            ", shutting down");
  server.stop();
  log::info("stopped");
  return 0;
}

} // namespace tb
