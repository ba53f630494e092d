// The broker as a whole: the actor system, the router, the gRPC server and
// the metrics listener.

#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/broker_context.hpp"
#include "actors/cluster/cluster_quorum.hpp"
#include "actors/protocol.hpp"
#include "config/broker_config.hpp"
#include "net/log_actor.hpp"
#include "routing/error.hpp"

namespace caf {
class actor_system;
class actor_system_config;
} // namespace caf

namespace grpc {
class Server;
} // namespace grpc

namespace tb {

class broker_service;
class cq_transport;
class metrics_server;
class tls_store;

/// Owns everything a running broker consists of. Start it, then stop it
/// (or destroy it, which stops it).
class broker_server {
public:
  /// Prepares a broker for `cfg`; nothing runs before `start()`.
  explicit broker_server(broker_config cfg);

  /// Stops the broker if it is running.
  ~broker_server();

  broker_server(const broker_server&) = delete;
  broker_server& operator=(const broker_server&) = delete;

  /// Spawns the actors and starts listening, on the gRPC address and then
  /// on the metrics address (unless metrics are off); returns an error
  /// naming the problem (for example an address that cannot be bound; one
  /// of the metrics address starts with `metrics listener: `).
  error_info start();

  /// Replaces the tokens with those of `auth` (see
  /// `broker_service::reload_auth`); an error says why nothing changed.
  error_info reload_auth(const auth_config& auth);

  /// Replaces the certificate, key and client CA of both listeners with the
  /// files `tls` names (see `tls_store::reload`): new handshakes use them,
  /// open connections keep going. An error says why nothing changed.
  error_info reload_tls(const tls_config& tls);

  /// Returns when the server certificate expires (Unix seconds); 0 without
  /// TLS.
  int64_t tls_not_after() const;

  /// Returns the path of the server certificate in use; empty without TLS.
  std::string tls_cert() const;

  /// Returns the address the broker listens on, with the port it bound.
  const std::string& address() const noexcept {
    return address_;
  }

  /// Returns the address of the metrics listener, with the port it bound;
  /// empty when metrics are off.
  const std::string& metrics_address() const noexcept {
    return metrics_address_;
  }

  /// Stops the metrics listener, stops accepting, ends every stream with
  /// UNAVAILABLE, waits at most
  /// `shutdown_grace` for calls to finish, logs what was still held,
  /// cancels what is left and stops the actors. Returns within
  /// `shutdown_grace` plus about a second; see `abandoned()`.
  void stop();

  /// Returns true if `stop()` gave up waiting for gRPC to let go of
  /// cancelled calls (clients that stopped reading): the broker no longer
  /// serves, but its threads still run, and the caller should end the
  /// process (`tinybroker` does) rather than wait for them.
  bool abandoned() const noexcept {
    return abandoned_;
  }

private:
  error_info create_declared_groups();

  // With [cluster]: starts the cluster actor and waits for the first sync
  // with the peers (docs/cluster.md); nothing without. The cluster actor
  // writes the majority rule's count into the sessions' context `ctx` and
  // reads their re-join counts from it.
  error_info start_node(const broker_context& ctx);

  // Starts the metrics listener if the config has one.
  error_info start_metrics();

  // Turns health to NOT_SERVING, ends every stream and waits for streams
  // and calls to end, at most `shutdown_grace`.
  void drain();

  // Logs the number of topics and subscriptions, and what each group held.
  void log_what_is_held();

  // Cancels every call and waits at most `patience` for gRPC to let go of
  // them; false if it did not.
  bool cancel_calls(std::chrono::milliseconds patience);

  // Stops the actors and the actor system without logging (and the
  // Session polling thread, after shutting the gRPC server down); start()
  // calls it when it fails, stop() when it is done draining.
  void release();

  // Stops the log actor and waits for it, so that its summary no longer
  // asks the service (about to be destroyed) for counters.
  void stop_logger();

  broker_config cfg_;
  std::unique_ptr<caf::actor_system_config> system_config_;
  std::unique_ptr<caf::actor_system> system_;
  router_actor router_;
  cluster_actor cluster_;
  std::vector<session_actor> publishers_;
  log_actor logger_;
  std::unique_ptr<broker_service> service_;
  std::unique_ptr<grpc::Server> server_;
  // The Session streams' completion queue and polling thread under
  // `[grpc] transport = "cq"`; null under "callback".
  std::unique_ptr<cq_transport> cq_;
  std::unique_ptr<metrics_server> metrics_;
  std::shared_ptr<tls_store> tls_;
  std::string address_;
  std::string metrics_address_;
  bool running_ = false;
  bool abandoned_ = false;
};

} // namespace tb
