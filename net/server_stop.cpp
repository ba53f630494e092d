// How a broker stops (spec 9): drain the streams and calls within the grace
// period, say what was still held, cancel what is left (bounded, whatever
// the clients do), then let the actors and gRPC go in the order they need.

#include "net/server.hpp"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "net/broker_service.hpp"
#include "net/cq_server.hpp"
#include "net/log.hpp"
#include "net/metrics_server.hpp"
#include "net/tls_store.hpp"

namespace tb {

void broker_server::stop() {
  if (!running_)
    return;
  running_ = false;
  if (metrics_)
    metrics_->shut_down(); // no scrape reaches the service from now on
  drain();
  // The HTTP threads end while streams drain: a connection still open
  // lasts at most a second (io_timeout) once the listener is closed. They
  // no longer touch the broker, so a stop does not wait for them.
  if (metrics_ && !metrics_->wait_stopped(std::chrono::milliseconds(100)))
    log::debug("metrics connections still closing; not waiting for them");
  log_what_is_held();
  if (server_ && !cancel_calls(std::chrono::milliseconds(500))) {
    // Only a client that stopped reading with data queued for it holds
    // gRPC this long (its graceful GOAWAY waits ~20 s for the client);
    // spec 9 bounds the stop whatever the clients do.
    abandoned_ = true;
    log::warn("client connections still open 500ms after cancelling their "
              "calls (clients that stopped reading); not waiting for them");
    return;
  }
  release();
}

void broker_server::drain() {
  if (server_)
    if (auto* health = server_->GetHealthCheckService())
      health->Shutdown(); // every service NOT_SERVING while draining
  if (!service_)
    return;
  service_->shut_down();
  // Streams were told to end; give them and unary calls the grace period.
  auto deadline = std::chrono::system_clock::now() + cfg_.shutdown_grace;
  if (!service_->wait_idle(deadline))
    log::warn("streams or calls still open after shutdown_grace; "
              "cancelling them");
}

bool broker_server::cancel_calls(std::chrono::milliseconds patience) {
  // Shutdown with a past deadline cancels every call at once; Wait returns
  // when gRPC let go of them, which a stalled client can delay for long.
  struct outcome {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
  };
  auto result = std::make_shared<outcome>();
  std::thread canceller{[server = server_.get(), result] {
    server->Shutdown(std::chrono::system_clock::now());
    server->Wait();
    std::lock_guard<std::mutex> guard{result->mutex};
    result->done = true;
    result->cv.notify_all();
  }};
  std::unique_lock<std::mutex> guard{result->mutex};
  if (!result->cv.wait_for(guard, patience, [&] { return result->done; })) {
    canceller.detach(); // the process ends before it does
    return false;
  }
  guard.unlock();
  canceller.join();
  log::debug("gRPC server stopped");
  return true;
}

void broker_server::log_what_is_held() {
  caf::scoped_actor self{*system_};
  auto patience = std::chrono::milliseconds(500);
  self->request(router_, patience, stats_atom_v)
      .receive(
          [](const router_stats& stats) {
            log::info("stopping with " + std::to_string(stats.topics) +
                      " topics and " + std::to_string(stats.subscriptions) +
                      " subscriptions and groups");
          },
          [](caf::error&) { log::warn("the router did not report at stop"); });
  // Spec 9: say what was still held, since a stop loses it.
  self->request(router_, patience, list_atom_v)
      .receive(
          [](const std::vector<group_info>& groups) {
            for (auto& g : groups)
              log::info(
                  "group \"" + g.name + "\" still held " +
                  std::to_string(g.counters.pending + g.counters.in_flight) +
                  " messages (" + std::to_string(g.counters.in_flight) +
                  " in flight); they are dropped");
          },
          [](caf::error&) { log::warn("the groups did not report at stop"); });
}

void broker_server::stop_logger() {
  if (!logger_)
    return;
  caf::scoped_actor self{*system_};
  self->send_exit(logger_, caf::exit_reason::user_shutdown);
  self->wait_for(logger_);
  logger_ = nullptr;
}

void broker_server::release() {
  stop_logger();
  for (auto& publisher : publishers_)
    caf::anon_send_exit(publisher, caf::exit_reason::user_shutdown);
  if (router_)
    caf::anon_send_exit(router_, caf::exit_reason::user_shutdown);
  if (cluster_)
    caf::anon_send_exit(cluster_, caf::exit_reason::user_shutdown);
  cluster_ = nullptr;
  publishers_.clear();
  router_ = nullptr;
  metrics_.reset();
  if (cq_) {
    // The queue goes down after the server (gRPC's order); a server that
    // was not shut down yet is now, cancelling what is left.
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now());
      server_->Wait();
    }
    cq_->stop();
  }
  server_.reset();
  cq_.reset();
  if (tls_)
    tls_->discard_private_copy();
  tls_.reset();
  service_.reset();
  system_.reset(); // waits for every actor
  system_config_.reset();
}

} // namespace tb
