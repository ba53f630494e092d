// tinybroker-relay-cq's server: the completion queues, their polling
// threads (each runs what its queue hands it: no hand-off to another
// thread), the unary calls, and a bounded shutdown.

#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "tools/relay_cq/cq_stream.hpp"

namespace tb::relay_cq {

/// How the relay polls.
struct cq_settings {
  /// Completion queues, each with its own polling thread; streams are
  /// spread over them as clients open them.
  unsigned queues = 1;

  /// After an event, how long a polling thread keeps asking its queue with
  /// a zero deadline before it blocks (0: it blocks at once). An idle relay
  /// blocks: spinning starts only after an event.
  std::chrono::microseconds spin{0};
};

/// The relay: starts listening in `start`, stops in `stop` (or the
/// destructor) within a bounded time, ending open streams.
class cq_relay {
public:
  /// Polls as `settings` say.
  explicit cq_relay(cq_settings settings) : settings_(settings) {}

  /// Stops if still running.
  ~cq_relay();

  cq_relay(const cq_relay&) = delete;
  cq_relay& operator=(const cq_relay&) = delete;

  /// Listens on `listen` (HOST:PORT) and starts the polling threads;
  /// returns the port, or 0 if gRPC could not listen there.
  int start(const std::string& listen);

  /// Ends every open stream (cancelled after `grace`), stops accepting
  /// calls, drains the queues and joins the polling threads.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(1));

private:
  void poll(grpc::ServerCompletionQueue* cq);
  void listen_all(grpc::ServerCompletionQueue* cq, cq_gate& gate);

  cq_settings settings_;
  cq_hub hub_;
  cq_stream::service service_;
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::unique_ptr<cq_gate>> gates_;
  std::vector<std::thread> threads_;
};

} // namespace tb::relay_cq
