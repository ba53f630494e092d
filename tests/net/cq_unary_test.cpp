// Tests of a unary call on the completion-queue transport (net/cq_unary.hpp)
// against a real gRPC server on loopback: a call answered after the
// transport stopped and its methods are gone starts nothing on the queue
// and touches nothing of theirs (an admin call whose actor answers late).

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "net/cq_unary.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;
using info_method = cq_unary_method<pb::InfoRequest, pb::InfoReply>;
using info_call = cq_unary_call<pb::InfoRequest, pb::InfoReply>;

/// A server whose Info calls are requested on a completion queue polled by
/// a thread of its own, as `cq_transport` does.
struct info_server {
  pb::Broker::AsyncService service;
  std::unique_ptr<grpc::ServerCompletionQueue> cq;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<info_method> method = std::make_unique<info_method>();
  std::thread poller;
  int port = 0;

  /// Starts serving Info with `serve`.
  explicit info_server(decltype(info_method::serve) serve) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service);
    cq = builder.AddCompletionQueue();
    server = builder.BuildAndStart();
    method->request = [this](grpc::ServerContext* ctx, pb::InfoRequest* req,
                             info_method::responder* out, void* tag) {
      service.RequestInfo(ctx, req, out, cq.get(), cq.get(), tag);
    };
    method->serve = std::move(serve);
    method->gate = std::make_shared<cq_unary_gate>();
    info_call::listen(*method);
    poller = std::thread{[this] {
      void* tag = nullptr;
      bool ok = false;
      while (cq->Next(&tag, &ok))
        static_cast<cq_event*>(tag)->proceed(ok);
    }};
  }

  /// Stops as `cq_transport::stop` does, then lets the method go.
  void stop() {
    method->gate->close();
    server->Shutdown(std::chrono::system_clock::now() + 200ms);
    cq->Shutdown();
    poller.join();
    method.reset();
  }
};

TEST(CqUnaryCall, AnAnswerAfterTheTransportIsGoneStartsNothing) {
  std::promise<unary_done> held;
  auto answer = held.get_future();
  info_server broker{[&](const grpc::ServerContextBase&, const pb::InfoRequest*,
                         pb::InfoReply*, unary_done done) {
    held.set_value(std::move(done)); // answered later, from elsewhere
  }};
  ASSERT_NE(broker.server, nullptr);
  auto stub = pb::Broker::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(broker.port),
                          grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  pb::InfoReply reply;
  grpc::Status status;
  std::thread caller{[&] {
    status = stub->Info(&ctx, pb::InfoRequest{}, &reply);
  }};
  ASSERT_EQ(answer.wait_for(10s), std::future_status::ready);
  auto done = answer.get();
  broker.stop();
  // The method and the transport's reference to the gate are gone: the
  // call finds the closed gate it holds itself, and deletes itself (under
  // AddressSanitizer, reading the gone method's gate is a use after free).
  done(grpc::Status::OK);
  caller.join();
  EXPECT_FALSE(status.ok()) << "answered after the server stopped";
}

} // namespace
} // namespace tb::test
