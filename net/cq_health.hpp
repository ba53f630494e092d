// The gRPC health service (grpc.health.v1.Health, spec 11) on the
// completion-queue transport: gRPC's default health service runs on its
// callback API, whose threads would wake with every event of the queue
// (net/cq_unary.hpp). This one answers Check and Watch on the broker's
// queue with the default service's rules: the overall service "" is
// SERVING from the start, a name is known once its status was set, an
// unknown name is NOT_FOUND to Check and SERVICE_UNKNOWN to Watch, and after
// `Shutdown` every name is NOT_SERVING for good. Like the default service
// it needs no token.

#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include <grpcpp/health_check_service_interface.h>

#include "grpc/health/v1/health.grpc.pb.h"
#include "net/cq_unary.hpp"

namespace tb {

/// The health statuses of one server and the calls that read them. Create
/// it before the server, register `service()` and hand `control()` to the
/// builder, `start` it once the server runs, `close` its gate (shared with
/// the unary calls) before the queue shuts down; it outlives the server.
class cq_health {
public:
  /// A Check's request.
  using check_request = grpc::health::v1::HealthCheckRequest;

  /// A Check's answer and each status a Watch sends.
  using check_response = grpc::health::v1::HealthCheckResponse;

  /// The generated service with both methods on the asynchronous API.
  using service_type = grpc::health::v1::Health::WithAsyncMethod_Check<
      grpc::health::v1::Health::WithAsyncMethod_Watch<
          grpc::health::v1::Health::Service>>;

  /// Starts with "" SERVING.
  cq_health();

  cq_health(const cq_health&) = delete;
  cq_health& operator=(const cq_health&) = delete;

  /// Returns the service to register with the server builder.
  grpc::Service* service() {
    return &service_;
  }

  /// Returns the handle the server keeps (`GetHealthCheckService`), for a
  /// `grpc::HealthCheckServiceServerBuilderOption`: its calls act on this.
  std::unique_ptr<grpc::HealthCheckServiceInterface> control();

  /// Waits for Check and Watch calls on `cq`, whose polling thread serves
  /// them; no operation starts on it once `gate` closed.
  void start(grpc::ServerCompletionQueue* cq,
             std::shared_ptr<cq_unary_gate> gate);

  /// Sets the status of `name` (makes it known), unless shut down.
  void set(const std::string& name, bool serving);

  /// Sets the status of every known name, unless shut down.
  void set_all(bool serving);

  /// Sets every known name NOT_SERVING and ignores later changes.
  void shut_down();

private:
  class watcher;

  // The status of `name` as a Watch reports it. Under mutex_.
  check_response::ServingStatus status_of(const std::string& name) const;

  // Answers one Check.
  void check(const check_request* req, check_response* reply,
             const unary_done& done);

  // Sets every known name's status and tells its watchers. Under mutex_.
  void set_every(bool serving);

  // Tells the watchers of `name` its status. Under mutex_.
  void notify(const std::string& name);

  service_type service_;
  cq_unary_method<check_request, check_response> check_method_;
  grpc::ServerCompletionQueue* cq_ = nullptr;
  std::shared_ptr<cq_unary_gate> gate_;
  std::mutex mutex_;
  std::map<std::string, bool> serving_;
  bool shut_down_ = false;
  std::unordered_set<watcher*> watchers_;
};

} // namespace tb
