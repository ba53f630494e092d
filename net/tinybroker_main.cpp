// tinybroker: starts the broker on built-in defaults or a TOML config and
// runs it until SIGTERM or SIGINT.

#include <csignal>
#include <cstdio>
#include <pthread.h>

#include <CLI/CLI.hpp>

#include "config/config_loader.hpp"
#include "net/log.hpp"
#include "net/server.hpp"

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

int main(int argc, char** argv) {
  CLI::App app{"tinybroker: an in-memory message broker with consumer groups, "
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
  app.set_version_flag("--version",
                       std::string{"tinybroker "} + TINYBROKER_VERSION);
  CLI11_PARSE(app, argc, argv);

  auto loaded = config_file.empty() ? tb::load_result{tb::broker_config{}}
                                    : tb::load_config_file(config_file);
  if (!loaded.ok()) {
    std::fprintf(stderr, "tinybroker: %s\n", loaded.error().text.c_str());
    return 2;
  }
  auto cfg = std::move(loaded).value();
  if (!listen.empty()) {
    if (auto problem = tb::check_listen_address(listen); !problem.empty()) {
      std::fprintf(stderr, "tinybroker: --listen: %s\n", problem.c_str());
      return 2;
    }
    cfg.listen = listen;
  }
  tb::log::level lvl = tb::log::level::info;
  tb::log::parse_level(cfg.log_level, lvl);
  tb::log::set_level(lvl);

  auto signals = block_stop_signals();
  tb::broker_server server{cfg};
  if (auto err = server.start()) {
    tb::log::error(err.text);
    return 1;
  }
  tb::log::info(tb::describe(cfg));
  tb::log::info(std::string{"tinybroker "} + TINYBROKER_VERSION +
                " listening on " + server.address() +
                " (config: " + cfg.source + ")");
  int sig = 0;
  sigwait(&signals, &sig);
  tb::log::info(std::string{"received "} +
                (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", shutting down");
  server.stop();
  tb::log::info("stopped");
  return 0;
}
