// Tests of peer_certificate_subject and make_server_credentials with a real
// gRPC server in this process and real TLS clients: the subject of a
// verified client certificate comes back exactly, in RFC 2253 form.

#include <chrono>
#include <mutex>
#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "../e2e/test_certs.hpp"
#include "net/peer_identity.hpp"
#include "net/tls_credentials.hpp"
#include "tinybroker.grpc.pb.h"

namespace {

namespace pb = tinybroker::v1;
using tb::test::shared_test_certs;

// A Broker service whose Publish records the caller's certificate subject.
class subject_recorder final : public pb::Broker::CallbackService {
public:
  grpc::ServerUnaryReactor* Publish(grpc::CallbackServerContext* ctx,
                                    const pb::PublishRequest*,
                                    pb::PublishReply*) override {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      subject_ = tb::peer_certificate_subject(*ctx);
    }
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  std::string subject() {
    std::lock_guard<std::mutex> guard{mutex_};
    return subject_;
  }

private:
  std::mutex mutex_;
  std::string subject_ = "(no call)";
};

// The recorder served on a free loopback port with the credentials of `cfg`.
class server_fixture {
public:
  explicit server_fixture(const tb::tls_config& cfg) {
    std::string problem;
    auto credentials = tb::make_server_credentials(cfg, problem);
    EXPECT_TRUE(credentials) << problem;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", credentials, &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(port_, 0);
  }

  ~server_fixture() {
    server_->Shutdown(std::chrono::system_clock::now());
  }

  // Calls Publish with `credentials`; returns the status.
  grpc::Status call(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(
        "localhost:" + std::to_string(port_), credentials, args);
    auto stub = pb::Broker::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    pb::PublishRequest request;
    pb::PublishReply reply;
    return stub->Publish(&ctx, request, &reply);
  }

  subject_recorder service_;

private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Returns client credentials trusting the test CA, presenting the test
// certificate `client` unless empty.
std::shared_ptr<grpc::ChannelCredentials>
client_credentials(const std::string& client) {
  const auto& certs = shared_test_certs();
  grpc::SslCredentialsOptions options{certs.read("ca.crt"), {}, {}};
  if (!client.empty()) {
    options.pem_private_key = certs.read(client + ".key");
    options.pem_cert_chain = certs.read(client + ".crt");
  }
  return grpc::SslCredentials(options);
}

// The [tls] settings of the test server certificate.
tb::tls_config server_tls(const std::string& client_ca) {
  const auto& certs = shared_test_certs();
  return {certs.path("server.crt"), certs.path("server.key"),
          client_ca.empty() ? std::string{} : certs.path(client_ca)};
}

TEST(peer_identity, a_verified_client_certificate_gives_its_rfc2253_subject) {
  server_fixture server{server_tls("ca.crt")};
  auto status = server.call(client_credentials("client"));
  ASSERT_TRUE(status.ok()) << status.error_message();
  // client.crt was made with -subj "/O=tinybroker-test/CN=client-a".
  EXPECT_EQ(server.service_.subject(), "CN=client-a,O=tinybroker-test");
}

TEST(peer_identity, special_characters_are_escaped_as_rfc_2253_says) {
  server_fixture server{server_tls("ca.crt")};
  ASSERT_TRUE(server.call(client_credentials("special-client")).ok());
  // Made with -utf8 -subj "/O=Exämple, Inc./CN=orders": the comma is
  // escaped with a backslash, each byte of the UTF-8 "ä" as \XX.
  EXPECT_EQ(server.service_.subject(), "CN=orders,O=Ex\\C3\\A4mple\\, Inc.");
}

TEST(peer_identity, a_refused_certificate_never_reaches_the_service) {
  server_fixture server{server_tls("ca.crt")};
  ASSERT_TRUE(server.call(client_credentials("client")).ok());
  EXPECT_EQ(server.service_.subject(), "CN=client-a,O=tinybroker-test");
  // Expired, and from another CA: the call fails and records nothing.
  EXPECT_FALSE(server.call(client_credentials("expired-client")).ok());
  EXPECT_FALSE(server.call(client_credentials("other-client")).ok());
  EXPECT_EQ(server.service_.subject(), "CN=client-a,O=tinybroker-test");
}

TEST(peer_identity, tls_without_client_ca_gives_no_subject) {
  server_fixture server{server_tls({})};
  // The client offers a certificate, but the server does not ask for it.
  ASSERT_TRUE(server.call(client_credentials("client")).ok());
  EXPECT_EQ(server.service_.subject(), "");
}

TEST(peer_identity, plain_text_gives_no_subject) {
  server_fixture server{tb::tls_config{}};
  ASSERT_TRUE(server.call(grpc::InsecureChannelCredentials()).ok());
  EXPECT_EQ(server.service_.subject(), "");
}

TEST(tls_credentials, mutual_tls_requires_a_client_certificate) {
  server_fixture server{server_tls("ca.crt")};
  auto status = server.call(client_credentials({}));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
  EXPECT_EQ(server.service_.subject(), "(no call)");
}

TEST(tls_credentials, bad_files_give_no_credentials_and_the_problem) {
  auto cfg = server_tls({});
  cfg.key = shared_test_certs().path("client.key");
  std::string problem;
  EXPECT_EQ(tb::make_server_credentials(cfg, problem), nullptr);
  EXPECT_EQ(problem, "tls: key " + cfg.key +
                         " does not match the certificate " + cfg.cert);
}

} // namespace
