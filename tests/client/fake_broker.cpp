#include "fake_broker.hpp"

#include <cstdlib>
#include <deque>
#include <fstream>
#include <iterator>

#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>
#include <gtest/gtest.h>

#include "../e2e/test_certs.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::test {

namespace {

namespace pb = tinybroker::v1;

// Returns the metadata `key` of `ctx`, if any.
std::optional<std::string> metadata(const grpc::CallbackServerContext& ctx,
                                    const char* key) {
  auto it = ctx.client_metadata().find(key);
  if (it == ctx.client_metadata().end())
    return std::nullopt;
  return std::string{it->second.data(), it->second.size()};
}

// Returns the authorization metadata of `ctx`, if any.
std::optional<std::string>
authorization(const grpc::CallbackServerContext& ctx) {
  return metadata(ctx, "authorization");
}

// Returns the common name of the client certificate of `ctx`, "" if none.
std::string client_cn(const grpc::CallbackServerContext& ctx) {
  auto auth = ctx.auth_context();
  if (!auth)
    return {};
  auto names = auth->FindPropertyValues("x509_common_name");
  return names.empty() ? "" : std::string{names[0].data(), names[0].size()};
}

// One call: a unary call gets an empty reply; a Session stream gets a
// Subscribed (or PERMISSION_DENIED error) frame per subscribe until the
// client half-closes.
class call_reactor : public grpc::ServerGenericBidiReactor {
public:
  call_reactor(fake_broker& broker, grpc::GenericCallbackServerContext* ctx)
      : broker_(broker),
        session_(ctx->method() == "/tinybroker.v1.Broker/Session") {
    auto auth = authorization(*ctx);
    end_early_ = broker.record({ctx->method(), auth, client_cn(*ctx),
                                metadata(*ctx, "tinybroker-client-name")});
    if (!broker.accepts(auth)) {
      Finish({grpc::StatusCode::UNAUTHENTICATED,
              "fake broker: missing or wrong token"});
      return;
    }
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!session_) {
      grpc::Slice empty{std::string{}};
      reply_ = grpc::ByteBuffer{&empty, 1};
      StartWriteAndFinish(&reply_, {}, grpc::Status::OK);
      return;
    }
    std::lock_guard<std::recursive_mutex> guard{mutex_};
    if (!ok) {
      reading_ = false;
      if (out_.empty())
        finish();
      return;
    }
    if (end_early_) {
      reading_ = false;
      Finish({grpc::StatusCode::UNAVAILABLE, "fake broker: stream ended"});
      finished_ = true;
      return;
    }
    answer(parse(in_));
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::recursive_mutex> guard{mutex_};
    out_.pop_front();
    if (ok && !out_.empty())
      StartWrite(&out_.front());
    else if (!reading_ || !ok)
      finish();
  }

  void OnDone() override {
    delete this;
  }

private:
  // Ends the stream once (under the mutex).
  void finish() {
    if (!finished_)
      Finish(grpc::Status::OK);
    finished_ = true;
  }

  // Returns the frame in `buffer`.
  static pb::ClientFrame parse(grpc::ByteBuffer& buffer) {
    pb::ClientFrame frame;
    grpc::ProtoBufferReader reader{&buffer};
    frame.ParseFromZeroCopyStream(&reader);
    return frame;
  }

  // Queues the answer to `frame` (under the mutex).
  void answer(const pb::ClientFrame& frame) {
    pb::ServerFrame reply;
    if (frame.has_publish()) {
      broker_.record_publish(frame.publish());
      if (!frame.publish().confirm())
        return;
      reply.mutable_publish_confirm()->set_request_id(frame.request_id());
      for (int i = 0; i < frame.publish().messages_size(); ++i)
        reply.mutable_publish_confirm()->add_results()->set_id(i + 1);
    } else if (!frame.has_subscribe()) {
      return;
    } else if (frame.subscribe().pattern().rfind("forbidden", 0) == 0) {
      auto* error = reply.mutable_error();
      error->set_request_id(frame.request_id());
      error->set_request("subscribe");
      error->set_subscription_id(frame.subscribe().subscription_id());
      error->mutable_error()->set_code(7);
      error->mutable_error()->set_message("fake broker: pattern not allowed");
    } else {
      reply.mutable_subscribed()->set_subscription_id(
          frame.subscribe().subscription_id());
      reply.mutable_subscribed()->set_request_id(frame.request_id());
    }
    grpc::ByteBuffer buffer;
    bool own = false;
    grpc::GenericSerialize<grpc::ProtoBufferWriter, pb::ServerFrame>(
        reply, &buffer, &own);
    out_.push_back(std::move(buffer));
    if (out_.size() == 1)
      StartWrite(&out_.front());
  }

  fake_broker& broker_;
  bool session_;
  grpc::ByteBuffer in_;
  grpc::ByteBuffer reply_;
  std::recursive_mutex mutex_; // gRPC may run a callback inline
  std::deque<grpc::ByteBuffer> out_;
  bool reading_ = true;
  bool finished_ = false;
  bool end_early_ = false;
};

// Makes a call_reactor for each call.
class generic_service : public grpc::CallbackGenericService {
public:
  explicit generic_service(fake_broker& broker) : broker_(broker) {}

  grpc::ServerGenericBidiReactor*
  CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new call_reactor(broker_, ctx);
  }

private:
  fake_broker& broker_;
};

} // namespace

std::string read_text(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

fake_pki make_fake_pki() {
  const auto& certs = shared_test_certs();
  fake_pki pki;
  pki.dir = certs.dir;
  pki.ca = certs.path("ca.crt");
  pki.other_ca = certs.path("other-ca.crt");
  pki.server_cert = certs.path("server.crt");
  pki.server_key = certs.path("server.key");
  pki.client_cert = certs.path("client.crt");
  pki.client_key = certs.path("client.key");
  return pki;
}

fake_broker::fake_broker(fake_broker_options options)
    : options_(std::move(options)),
      service_(std::make_unique<generic_service>(*this)) {
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::InsecureServerCredentials();
  if (options_.tls) {
    grpc::SslServerCredentialsOptions ssl{
        options_.require_client_cert
            ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
            : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE};
    ssl.pem_root_certs = read_text(options_.certs.ca);
    ssl.pem_key_cert_pairs.push_back({read_text(options_.certs.server_key),
                                      read_text(options_.certs.server_cert)});
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", credentials, &port_);
  builder.RegisterCallbackGenericService(service_.get());
  server_ = builder.BuildAndStart();
  EXPECT_TRUE(server_ != nullptr && port_ > 0) << "the fake broker failed";
}

fake_broker::~fake_broker() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(5));
    server_->Wait();
  }
}

std::string fake_broker::address() const {
  return "127.0.0.1:" + std::to_string(port_);
}

std::string fake_broker::localhost_address() const {
  return "localhost:" + std::to_string(port_);
}

std::optional<recorded_call>
fake_broker::wait_call(const std::string& method,
                       std::chrono::milliseconds timeout) {
  auto ends_with = [&](const recorded_call& call) {
    return call.method.size() >= method.size() &&
           call.method.compare(call.method.size() - method.size(),
                               method.size(), method) == 0;
  };
  std::optional<recorded_call> found;
  std::unique_lock<std::mutex> guard{mutex_};
  cv_.wait_for(guard, timeout, [&] {
    for (auto& call : calls_)
      if (ends_with(call))
        return found = call, true;
    return false;
  });
  return found;
}

std::vector<recorded_call> fake_broker::calls() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return calls_;
}

bool fake_broker::record(recorded_call call) {
  std::lock_guard<std::mutex> guard{mutex_};
  bool session = call.method == "/tinybroker.v1.Broker/Session";
  calls_.push_back(std::move(call));
  cv_.notify_all();
  return session && options_.end_first_session && sessions_++ == 0;
}

void fake_broker::record_publish(const tinybroker::v1::Publish& publish) {
  std::lock_guard<std::mutex> guard{mutex_};
  publishes_.push_back(publish);
  cv_.notify_all();
}

std::vector<tinybroker::v1::Publish>
fake_broker::wait_publishes(std::size_t count,
                            std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> guard{mutex_};
  cv_.wait_for(guard, timeout, [&] { return publishes_.size() >= count; });
  return publishes_;
}

bool fake_broker::accepts(
    const std::optional<std::string>& authorization) const {
  return options_.token.empty() || authorization == "Bearer " + options_.token;
}

} // namespace tb::test
