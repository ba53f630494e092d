// tinybroker-relay: the transport's floor. A bare gRPC callback server, no
// actors, that forwards every publish frame to every subscription in the
// broker's frame types; run tinybroker-bench against it as against a broker
// to see what gRPC alone costs per message (docs/performance.md, "Latency
// at everyday rates"). Not a broker: no patterns, groups, auth or limits.

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include "net/grpc_settings.hpp"
#include "tools/relay/relay_service.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tinybroker-relay: a bare gRPC relay with the broker's frame "
               "types, the floor for tinybroker-bench's latency and CPU "
               "figures (docs/performance.md). Every publish frame goes to "
               "every subscription, patterns unmatched. Stops on SIGINT or "
               "SIGTERM."};
  std::string listen = "127.0.0.1:7402";
  app.add_option("--listen", listen, "HOST:PORT to listen on (port 0: any)")
      ->capture_default_str();
  app.set_version_flag("--version",
                       std::string{"tinybroker-relay "} + TINYBROKER_VERSION);
  CLI11_PARSE(app, argc, argv);

  // Handled by sigwait below, on this thread only.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  tb::prefer_sized_reads();
  tb::skip_lock_order_checks();
  tb::relay::relay_service service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&service);
  tb::add_connection_settings(builder);
  auto server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr,
                 "tinybroker-relay: cannot listen on %s (is the port in use, "
                 "or the address not HOST:PORT?)\n",
                 listen.c_str());
    return 2;
  }
  auto host = listen.substr(0, listen.rfind(':'));
  std::printf("tinybroker-relay listening on %s:%d\n", host.c_str(), port);
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server->Wait();
  return 0;
}
