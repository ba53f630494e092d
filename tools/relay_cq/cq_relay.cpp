#include "tools/relay_cq/cq_relay.hpp"

#include <cstdio>
#include <functional>
#include <utility>

#include "net/grpc_settings.hpp"

namespace tb::relay_cq {

namespace pb = tinybroker::v1;

namespace {

using relay_service = cq_stream::service;

// One unary call on a completion queue: requested, answered at once by
// `answer`, finished, deleted. Answers OK for the group calls the load
// generator makes, UNIMPLEMENTED for the rest (as tools/relay does).
template <class Request, class Reply>
class cq_unary_call final : public cq_tag {
public:
  // Asks gRPC for one call of the method.
  using request_fn = std::function<void(grpc::ServerContext*, Request*,
                                        grpc::ServerAsyncResponseWriter<Reply>*,
                                        grpc::ServerCompletionQueue*, void*)>;
  // Fills in the reply; returns the call's status.
  using answer_fn = std::function<grpc::Status(const Request&, Reply&)>;

  // Waits for the next call of the method on `cq` (unless `gate` is closed).
  static void listen(request_fn request, answer_fn answer,
                     grpc::ServerCompletionQueue* cq, cq_gate& gate) {
    auto* call =
        new cq_unary_call(std::move(request), std::move(answer), cq, gate);
    if (!gate.run([&] {
          call->request_(&call->context_, &call->request_msg_, &call->writer_,
                         cq, call);
        }))
      delete call;
  }

  void proceed(bool ok) override {
    if (answered_ || !ok) { // finished, or the relay stops
      gate_.leave();
      delete this;
      return;
    }
    listen(request_, answer_, cq_, gate_); // the next call
    answered_ = true;
    auto status = answer_(request_msg_, reply_);
    writer_.Finish(reply_, status, this);
  }

private:
  cq_unary_call(request_fn request, answer_fn answer,
                grpc::ServerCompletionQueue* cq, cq_gate& gate)
      : request_(std::move(request)), answer_(std::move(answer)), cq_(cq),
        gate_(gate) {}

  request_fn request_;
  answer_fn answer_;
  grpc::ServerCompletionQueue* cq_;
  cq_gate& gate_;
  grpc::ServerContext context_;
  Request request_msg_;
  Reply reply_;
  grpc::ServerAsyncResponseWriter<Reply> writer_{&context_};
  bool answered_ = false;
};

// Requests one call of `method` of `svc` for `cq`, answered by `answer`.
template <class Request, class Reply, class Method>
void cq_listen_unary(relay_service& svc, Method method,
                     grpc::ServerCompletionQueue* cq, cq_gate& gate,
                     typename cq_unary_call<Request, Reply>::answer_fn answer) {
  cq_unary_call<Request, Reply>::listen(
      [&svc, method](grpc::ServerContext* ctx, Request* req,
                     grpc::ServerAsyncResponseWriter<Reply>* writer,
                     grpc::ServerCompletionQueue* q,
                     void* tag) { (svc.*method)(ctx, req, writer, q, q, tag); },
      std::move(answer), cq, gate);
}

// The answer of every method the relay does not serve.
template <class Request, class Reply>
grpc::Status cq_unimplemented(const Request&, Reply&) {
  return {grpc::StatusCode::UNIMPLEMENTED,
          "the relay serves Session, CreateGroup and DeleteGroup only"};
}

} // namespace

void cq_relay::listen_all(grpc::ServerCompletionQueue* cq, cq_gate& gate) {
  cq_stream::listen(hub_, service_, cq, gate);
  cq_listen_unary<pb::CreateGroupRequest, pb::GroupInfo>(
      service_, &relay_service::RequestCreateGroup, cq, gate,
      [](const pb::CreateGroupRequest& request, pb::GroupInfo& reply) {
        // A Subscribe with a group joins it (cq_hub::join).
        reply.set_name(request.name());
        *reply.mutable_settings() = request.settings();
        return grpc::Status::OK;
      });
  cq_listen_unary<pb::DeleteGroupRequest, pb::DeleteGroupReply>(
      service_, &relay_service::RequestDeleteGroup, cq, gate,
      [this](const pb::DeleteGroupRequest& request, pb::DeleteGroupReply&) {
        hub_.drop_group(request.name());
        return grpc::Status::OK;
      });
  // Every other method is registered too (the service is asynchronous
  // throughout), so each must be answered, not left waiting.
  cq_listen_unary<pb::PublishRequest, pb::PublishReply>(
      service_, &relay_service::RequestPublish, cq, gate,
      cq_unimplemented<pb::PublishRequest, pb::PublishReply>);
  cq_listen_unary<pb::PurgeGroupRequest, pb::PurgeGroupReply>(
      service_, &relay_service::RequestPurgeGroup, cq, gate,
      cq_unimplemented<pb::PurgeGroupRequest, pb::PurgeGroupReply>);
  cq_listen_unary<pb::ListGroupsRequest, pb::ListGroupsReply>(
      service_, &relay_service::RequestListGroups, cq, gate,
      cq_unimplemented<pb::ListGroupsRequest, pb::ListGroupsReply>);
  cq_listen_unary<pb::StatsRequest, pb::StatsReply>(
      service_, &relay_service::RequestStats, cq, gate,
      cq_unimplemented<pb::StatsRequest, pb::StatsReply>);
  cq_listen_unary<pb::InfoRequest, pb::InfoReply>(
      service_, &relay_service::RequestInfo, cq, gate,
      cq_unimplemented<pb::InfoRequest, pb::InfoReply>);
  cq_listen_unary<pb::Request, pb::Response>(
      service_, &relay_service::RequestRequest, cq, gate,
      cq_unimplemented<pb::Request, pb::Response>);
}

int cq_relay::start(const std::string& listen) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&service_);
  tb::add_connection_settings(builder);
  for (unsigned i = 0; i < settings_.queues; ++i)
    queues_.push_back(builder.AddCompletionQueue());
  server_ = builder.BuildAndStart();
  if (!server_ || port == 0) {
    if (server_)
      server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    for (auto& cq : queues_) {
      cq->Shutdown();
      void* tag = nullptr;
      bool ok = false;
      while (cq->Next(&tag, &ok)) {
      }
    }
    queues_.clear();
    return 0;
  }
  for (auto& cq : queues_) {
    gates_.push_back(std::make_unique<cq_gate>());
    listen_all(cq.get(), *gates_.back());
  }
  for (auto& cq : queues_)
    threads_.emplace_back([this, q = cq.get()] { poll(q); });
  return port;
}

void cq_relay::poll(grpc::ServerCompletionQueue* cq) {
  using clock = std::chrono::steady_clock;
  auto spin_until = clock::now();
  void* tag = nullptr;
  bool ok = false;
  for (;;) {
    if (settings_.spin.count() > 0 && clock::now() < spin_until) {
      auto status = cq->AsyncNext(&tag, &ok, gpr_time_0(GPR_CLOCK_MONOTONIC));
      if (status == grpc::CompletionQueue::SHUTDOWN)
        return;
      if (status == grpc::CompletionQueue::TIMEOUT)
        continue;
    } else if (!cq->Next(&tag, &ok)) {
      return; // shut down and drained
    }
    static_cast<cq_tag*>(tag)->proceed(ok);
    if (settings_.spin.count() > 0)
      spin_until = clock::now() + settings_.spin;
  }
}

void cq_relay::stop(std::chrono::milliseconds grace) {
  if (!server_)
    return;
  // Open streams read a failure (cancelled after `grace`) and finish; the
  // polling threads keep running until the queues are drained.
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  for (auto& gate : gates_)
    gate->close();
  // A cancelled stream still finishes: its queue must take that operation.
  for (auto& gate : gates_)
    if (!gate->wait_idle(grace + std::chrono::seconds(2)))
      std::fprintf(stderr, "tinybroker-relay-cq: calls still pending at "
                           "shutdown\n");
  for (auto& cq : queues_)
    cq->Shutdown();
  for (auto& thread : threads_)
    thread.join();
  threads_.clear();
  server_.reset();
  queues_.clear();
  gates_.clear();
}

cq_relay::~cq_relay() {
  stop();
}

} // namespace tb::relay_cq
