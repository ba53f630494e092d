// The completion-queue transport of the Session stream (`[grpc] transport =
// "cq"`): the Broker service with Session on gRPC's asynchronous API and the
// unary calls on the callback API (gRPC lets a service mix them), one
// completion queue and the broker's own polling thread, which takes every
// Session event and runs the actors it makes runnable (caller_runs): no
// hand-off between gRPC's threads (docs/performance.md, "The
// completion-queue transport").

#pragma once

#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "net/session_cq.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb {

class broker_service;

/// The generated service of the completion-queue transport: Session raw
/// and asynchronous, Publish raw and the other calls as in
/// `broker_callback_service`.
using broker_cq_base = tinybroker::v1::Broker::WithCallbackMethod_Request<
    tinybroker::v1::Broker::WithRawCallbackMethod_Publish<
        tinybroker::v1::Broker::WithRawMethod_Session<
            tinybroker::v1::Broker::WithCallbackMethod_CreateGroup<
                tinybroker::v1::Broker::WithCallbackMethod_DeleteGroup<
                    tinybroker::v1::Broker::WithCallbackMethod_PurgeGroup<
                        tinybroker::v1::Broker::WithCallbackMethod_ListGroups<
                            tinybroker::v1::Broker::WithCallbackMethod_Stats<
                                tinybroker::v1::Broker::WithCallbackMethod_Info<
                                    tinybroker::v1::Broker::Service>>>>>>>>>;

/// The Broker service as the completion-queue transport registers it: each
/// unary call goes to the `broker_service` it wraps, unchanged; Session
/// streams are requested by `cq_session`.
class broker_cq_service final : public broker_cq_base,
                                public cq_session_source {
public:
  /// Serves the unary calls with `service`.
  explicit broker_cq_service(broker_service& service) : service_(service) {
    // nop
  }

  void request_session(grpc::ServerContext* ctx, raw_stream* stream,
                       grpc::ServerCompletionQueue* cq, void* tag) override;

  grpc::ServerUnaryReactor* Publish(grpc::CallbackServerContext* ctx,
                                    const grpc::ByteBuffer* req,
                                    grpc::ByteBuffer* reply) override;

  grpc::ServerUnaryReactor* Request(grpc::CallbackServerContext* ctx,
                                    const tinybroker::v1::Request* req,
                                    tinybroker::v1::Response* reply) override;

  grpc::ServerUnaryReactor*
  CreateGroup(grpc::CallbackServerContext* ctx,
              const tinybroker::v1::CreateGroupRequest* req,
              tinybroker::v1::GroupInfo* reply) override;

  grpc::ServerUnaryReactor*
  DeleteGroup(grpc::CallbackServerContext* ctx,
              const tinybroker::v1::DeleteGroupRequest* req,
              tinybroker::v1::DeleteGroupReply* reply) override;

  grpc::ServerUnaryReactor*
  PurgeGroup(grpc::CallbackServerContext* ctx,
             const tinybroker::v1::PurgeGroupRequest* req,
             tinybroker::v1::PurgeGroupReply* reply) override;

  grpc::ServerUnaryReactor*
  ListGroups(grpc::CallbackServerContext* ctx,
             const tinybroker::v1::ListGroupsRequest* req,
             tinybroker::v1::ListGroupsReply* reply) override;

  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx,
                                  const tinybroker::v1::StatsRequest* req,
                                  tinybroker::v1::StatsReply* reply) override;

  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* ctx,
                                 const tinybroker::v1::InfoRequest* req,
                                 tinybroker::v1::InfoReply* reply) override;

private:
  broker_service& service_;
};

/// The Session streams of a broker on one completion queue with one
/// polling thread, which blocks in the queue while nothing happens (no
/// spin: an idle broker costs nothing). Order: `add_to` the builder,
/// build the server, `start`; at the end shut the server down (Shutdown,
/// Wait), then `stop`.
class cq_transport {
public:
  /// Serves the streams (and, through `broker_cq_service`, the unary
  /// calls) with `service`, which outlives this object.
  explicit cq_transport(broker_service& service);

  /// Stops the polling thread if still running (see `stop`).
  ~cq_transport();

  cq_transport(const cq_transport&) = delete;
  cq_transport& operator=(const cq_transport&) = delete;

  /// Registers the service and adds the completion queue to `builder`.
  void add_to(grpc::ServerBuilder& builder);

  /// Waits for the first stream and starts the polling thread. Call once
  /// the server built.
  void start();

  /// Shuts the queue down, lets the polling thread take what is left and
  /// joins it. Call after the server shut down (or failed to start):
  /// every stream is over by then. Does nothing the second time.
  void stop();

private:
  void poll();

  broker_service& service_;
  broker_cq_service grpc_service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::thread poller_;
  bool stopped_ = false;
};

} // namespace tb
