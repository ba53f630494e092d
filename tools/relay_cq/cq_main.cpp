// tinybroker-relay-cq: the transport's floor on gRPC's completion-queue
// API. The same relay as tinybroker-relay (every publish frame to every
// subscription, groups in turn, the broker's frame types and gRPC
// settings), but with its own polling threads instead of gRPC's callback
// threads; tinybroker-bench drives both alike (docs/performance.md, "The
// floors: callback vs completion-queue"). Not a broker.

#include <csignal>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "net/grpc_settings.hpp"
#include "tools/relay_cq/cq_relay.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tinybroker-relay-cq: tinybroker-relay on gRPC's "
               "completion-queue API, with its own polling threads (one per "
               "completion queue), the floor for tinybroker-bench's latency "
               "and CPU figures (docs/performance.md). Every publish frame "
               "goes to every subscription, patterns unmatched. Stops on "
               "SIGINT or SIGTERM, ending open streams within a second."};
  std::string listen = "127.0.0.1:7403";
  unsigned queues = 1;
  unsigned spin_us = 0;
  app.add_option("--listen", listen, "HOST:PORT to listen on (port 0: any)")
      ->capture_default_str();
  app.add_option("--cqs", queues,
                 "completion queues, each with its own polling thread")
      ->capture_default_str()
      ->check(CLI::Range(1u, 16u));
  app.add_option("--spin-us", spin_us,
                 "after an event, poll with a zero deadline for up to this "
                 "many microseconds before blocking (0: block at once)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 100000u));
  app.set_version_flag("--version", std::string{"tinybroker-relay-cq "} +
                                        TINYBROKER_VERSION);
  CLI11_PARSE(app, argc, argv);

  // Handled by sigwait below, on this thread only.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  tb::prefer_sized_reads();
  tb::skip_lock_order_checks();
  tb::relay_cq::cq_relay relay{{queues, std::chrono::microseconds{spin_us}}};
  int port = relay.start(listen);
  if (port == 0) {
    std::fprintf(stderr,
                 "tinybroker-relay-cq: cannot listen on %s (is the port in "
                 "use, or the address not HOST:PORT?)\n",
                 listen.c_str());
    return 2;
  }
  auto host = listen.substr(0, listen.rfind(':'));
  std::printf("tinybroker-relay-cq listening on %s:%d (%u completion "
              "queue%s, spin %u us)\n",
              host.c_str(), port, queues, queues == 1 ? "" : "s", spin_us);
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  relay.stop();
  return 0;
}
