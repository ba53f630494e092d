#include "net/cq_server.hpp"

#include <pthread.h>

#include "net/broker_service.hpp"
#include "net/log.hpp"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

} // namespace

// -- broker_cq_service --------------------------------------------------------

void broker_cq_service::request_session(grpc::ServerContext* ctx,
                                        raw_stream* stream,
                                        grpc::ServerCompletionQueue* cq,
                                        void* tag) {
  RequestSession(ctx, stream, cq, cq, tag);
}

grpc::ServerUnaryReactor*
broker_cq_service::Publish(grpc::CallbackServerContext* ctx,
                           const grpc::ByteBuffer* req,
                           grpc::ByteBuffer* reply) {
  return service_.Publish(ctx, req, reply);
}

grpc::ServerUnaryReactor*
broker_cq_service::Request(grpc::CallbackServerContext* ctx,
                           const pb::Request* req, pb::Response* reply) {
  return service_.Request(ctx, req, reply);
}

grpc::ServerUnaryReactor*
broker_cq_service::CreateGroup(grpc::CallbackServerContext* ctx,
                               const pb::CreateGroupRequest* req,
                               pb::GroupInfo* reply) {
  return service_.CreateGroup(ctx, req, reply);
}

grpc::ServerUnaryReactor*
broker_cq_service::DeleteGroup(grpc::CallbackServerContext* ctx,
                               const pb::DeleteGroupRequest* req,
                               pb::DeleteGroupReply* reply) {
  return service_.DeleteGroup(ctx, req, reply);
}

grpc::ServerUnaryReactor*
broker_cq_service::PurgeGroup(grpc::CallbackServerContext* ctx,
                              const pb::PurgeGroupRequest* req,
                              pb::PurgeGroupReply* reply) {
  return service_.PurgeGroup(ctx, req, reply);
}

grpc::ServerUnaryReactor*
broker_cq_service::ListGroups(grpc::CallbackServerContext* ctx,
                              const pb::ListGroupsRequest* req,
                              pb::ListGroupsReply* reply) {
  return service_.ListGroups(ctx, req, reply);
}

grpc::ServerUnaryReactor*
broker_cq_service::Stats(grpc::CallbackServerContext* ctx,
                         const pb::StatsRequest* req, pb::StatsReply* reply) {
  return service_.Stats(ctx, req, reply);
}

grpc::ServerUnaryReactor*
broker_cq_service::Info(grpc::CallbackServerContext* ctx,
                        const pb::InfoRequest* req, pb::InfoReply* reply) {
  return service_.Info(ctx, req, reply);
}

// -- cq_transport -------------------------------------------------------------

cq_transport::cq_transport(broker_service& service)
    : service_(service), grpc_service_(service) {
  // nop
}

cq_transport::~cq_transport() {
  stop();
}

void cq_transport::add_to(grpc::ServerBuilder& builder) {
  builder.RegisterService(&grpc_service_);
  cq_ = builder.AddCompletionQueue();
}

void cq_transport::start() {
  cq_session::listen(service_, grpc_service_, cq_.get());
  poller_ = std::thread{[this] {
    poll();
  }};
}

void cq_transport::poll() {
  // Named, so that `top -H` (and a test) can tell it from gRPC's threads.
  pthread_setname_np(pthread_self(), "tb-session-cq");
  void* tag = nullptr;
  bool ok = false;
  // Blocks while nothing happens; each event is handled on this thread,
  // and the session actors it wakes run here too (session_bridge).
  while (cq_->Next(&tag, &ok))
    static_cast<cq_event*>(tag)->proceed(ok);
}

void cq_transport::stop() {
  if (stopped_ || cq_ == nullptr)
    return;
  stopped_ = true;
  // A stream whose session actor never finished it (the server stopped
  // first) must not keep the queue from shutting down.
  if (poller_.joinable())
    grpc_service_.release_held(std::chrono::seconds(1));
  cq_->Shutdown();
  if (poller_.joinable()) {
    poller_.join();
  } else {
    // Never started: drain what the failed server left.
    void* tag = nullptr;
    bool ok = false;
    while (cq_->Next(&tag, &ok)) {
      // nop
    }
  }
  log::debug("Session polling thread stopped");
}

} // namespace tb
