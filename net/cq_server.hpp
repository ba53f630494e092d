// The completion-queue transport (`[grpc] transport = "cq"`): every call of
// the Broker service (Session streams, net/session_cq.hpp, and the unary
// calls, net/cq_unary.hpp) and of the health service (net/cq_health.hpp) on
// gRPC's asynchronous API, one completion queue and the broker's own polling
// thread, which takes every event and runs the actors it makes runnable
// (caller_runs): no hand-off between gRPC's threads, and none of the
// callback API's threads (docs/performance.md, "The completion-queue
// transport").

#pragma once

#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "net/cq_health.hpp"
#include "net/cq_unary.hpp"
#include "net/session_cq.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb {

class broker_service;

/// The generated service of the completion-queue transport: Session and
/// Publish raw, every method asynchronous.
using broker_cq_base = tinybroker::v1::Broker::WithAsyncMethod_Request<
    tinybroker::v1::Broker::WithRawMethod_Publish<
        tinybroker::v1::Broker::WithRawMethod_Session<
            tinybroker::v1::Broker::WithAsyncMethod_CreateGroup<
                tinybroker::v1::Broker::WithAsyncMethod_DeleteGroup<
                    tinybroker::v1::Broker::WithAsyncMethod_PurgeGroup<
                        tinybroker::v1::Broker::WithAsyncMethod_ListGroups<
                            tinybroker::v1::Broker::WithAsyncMethod_Stats<
                                tinybroker::v1::Broker::WithAsyncMethod_Info<
                                    tinybroker::v1::Broker::Service>>>>>>>>>;

/// The Broker service as the completion-queue transport registers it:
/// Session streams are requested by `cq_session`, the unary calls by
/// `cq_unary_call` (see `cq_transport`).
class broker_cq_service final : public broker_cq_base,
                                public cq_session_source {
public:
  void request_session(grpc::ServerContext* ctx, raw_stream* stream,
                       grpc::ServerCompletionQueue* cq, void* tag) override;
};

/// The calls of a broker on one completion queue with one polling thread,
/// which blocks in the queue while nothing happens (no spin: an idle broker
/// costs nothing). Order: `add_to` the builder, build the server, `start`;
/// at the end shut the server down (Shutdown, Wait), then `stop`.
class cq_transport {
public:
  /// Serves the streams and the unary calls with `service`, which outlives
  /// this object, and the health service if `health` (the
  /// `observability.health_service` setting).
  cq_transport(broker_service& service, bool health);

  /// Stops the polling thread if still running (see `stop`).
  ~cq_transport();

  cq_transport(const cq_transport&) = delete;
  cq_transport& operator=(const cq_transport&) = delete;

  /// Registers the services (and this health service as the server's) and
  /// adds the completion queue to `builder`.
  void add_to(grpc::ServerBuilder& builder);

  /// Waits for the first stream and call of each method and starts the
  /// polling thread. Call once the server built.
  void start();

  /// Shuts the queue down, lets the polling thread take what is left and
  /// joins it. Call after the server shut down (or failed to start):
  /// every stream is over by then. Does nothing the second time.
  void stop();

private:
  // Each unary method of the Broker service on the queue.
  struct unary_methods {
    cq_unary_method<grpc::ByteBuffer, grpc::ByteBuffer> publish;
    cq_unary_method<tinybroker::v1::Request, tinybroker::v1::Response> request;
    cq_unary_method<tinybroker::v1::CreateGroupRequest,
                    tinybroker::v1::GroupInfo>
        create_group;
    cq_unary_method<tinybroker::v1::DeleteGroupRequest,
                    tinybroker::v1::DeleteGroupReply>
        delete_group;
    cq_unary_method<tinybroker::v1::PurgeGroupRequest,
                    tinybroker::v1::PurgeGroupReply>
        purge_group;
    cq_unary_method<tinybroker::v1::ListGroupsRequest,
                    tinybroker::v1::ListGroupsReply>
        list_groups;
    cq_unary_method<tinybroker::v1::StatsRequest, tinybroker::v1::StatsReply>
        stats;
    cq_unary_method<tinybroker::v1::InfoRequest, tinybroker::v1::InfoReply>
        info;
  };

  void poll();

  // Fills `unary_` and waits for the first call of each method.
  void listen_unary();

  broker_service& service_;
  broker_cq_service grpc_service_;
  std::unique_ptr<cq_health> health_;
  std::shared_ptr<cq_unary_gate> gate_ = std::make_shared<cq_unary_gate>();
  unary_methods unary_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::thread poller_;
  bool stopped_ = false;
};

} // namespace tb
