#include "net/cq_server.hpp"

#include <pthread.h>

#include <grpcpp/ext/health_check_service_server_builder_option.h>

#include "net/broker_service.hpp"
#include "net/log.hpp"

namespace tb {

// -- broker_cq_service --------------------------------------------------------

void broker_cq_service::request_session(grpc::ServerContext* ctx,
                                        raw_stream* stream,
                                        grpc::ServerCompletionQueue* cq,
                                        void* tag) {
  RequestSession(ctx, stream, cq, cq, tag);
}

// -- cq_transport -------------------------------------------------------------

cq_transport::cq_transport(broker_service& service, bool health)
    : service_(service) {
  if (health)
    health_ = std::make_unique<cq_health>();
}

cq_transport::~cq_transport() {
  stop();
}

void cq_transport::add_to(grpc::ServerBuilder& builder) {
  builder.RegisterService(&grpc_service_);
  if (health_) {
    builder.RegisterService(health_->service());
    builder.SetOption(
        std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(
            health_->control()));
  }
  cq_ = builder.AddCompletionQueue();
}

namespace {

// Binds `method` to the transport: its calls are requested with the
// generated `RequestX` (`ask`) on `cq` and served by `serve`.
template <class Request, class Reply, class Ask, class Serve>
void bind_method(cq_unary_method<Request, Reply>& method,
                 broker_cq_service& grpc, Ask ask, broker_service& service,
                 Serve serve, grpc::ServerCompletionQueue* cq,
                 const std::shared_ptr<cq_unary_gate>& gate) {
  method.request = [&grpc, ask, cq](grpc::ServerContext* ctx, Request* req,
                                    grpc::ServerAsyncResponseWriter<Reply>* out,
                                    void* tag) {
    (grpc.*ask)(ctx, req, out, cq, cq, tag);
  };
  method.serve = [&service, serve](const grpc::ServerContextBase& ctx,
                                   const Request* req, Reply* reply,
                                   unary_done done) {
    (service.*serve)(ctx, req, reply, std::move(done));
  };
  method.gate = gate;
  cq_unary_call<Request, Reply>::listen(method);
}

} // namespace

void cq_transport::listen_unary() {
  auto* cq = cq_.get();
  auto& g = grpc_service_;
  bind_method(unary_.publish, g, &broker_cq_service::RequestPublish, service_,
              &broker_service::serve_publish, cq, gate_);
  bind_method(unary_.request, g, &broker_cq_service::RequestRequest, service_,
              &broker_service::serve_request, cq, gate_);
  bind_method(unary_.create_group, g, &broker_cq_service::RequestCreateGroup,
              service_, &broker_service::serve_create_group, cq, gate_);
  bind_method(unary_.delete_group, g, &broker_cq_service::RequestDeleteGroup,
              service_, &broker_service::serve_delete_group, cq, gate_);
  bind_method(unary_.purge_group, g, &broker_cq_service::RequestPurgeGroup,
              service_, &broker_service::serve_purge_group, cq, gate_);
  bind_method(unary_.list_groups, g, &broker_cq_service::RequestListGroups,
              service_, &broker_service::serve_list_groups, cq, gate_);
  bind_method(unary_.stats, g, &broker_cq_service::RequestStats, service_,
              &broker_service::serve_stats, cq, gate_);
  bind_method(unary_.info, g, &broker_cq_service::RequestInfo, service_,
              &broker_service::serve_info, cq, gate_);
  if (health_)
    health_->start(cq, gate_);
}

void cq_transport::start() {
  cq_session::listen(service_, grpc_service_, cq_.get());
  listen_unary();
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
  // A unary call answered from now on, or a health change, starts nothing
  // on the queue.
  gate_->close();
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
