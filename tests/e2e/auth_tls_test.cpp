// End to end: under mutual TLS a client certificate's subject stands for a
// token (spec 10), and a bearer token still decides when one is sent.

#include "auth_fixture.hpp"
#include "client/connection.hpp"
#include "test_certs.hpp"
#include "tls_fixture.hpp"

namespace tb::test {
namespace {

// A broker with mutual TLS whose token "client-a" is the test client
// certificate's subject, and may publish only under `certs.>`.
class AuthTlsTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto config =
        tls_config_file("server.crt", "server.key", "ca.crt",
                        "[[auth.tokens]]\nname = \"client-a\"\n"
                        "cert_subject = \"CN=client-a,O=tinybroker-test\"\n"
                        "publish = [\"certs.>\"]\n"
                        "[[auth.tokens]]\nname = \"orders\"\nsecret = \"" +
                            orders_secret + "\"\npublish = [\"orders.>\"]\n");
    broker_ = started_broker({"--config", config});
  }

  /// Publishes to `topic` over `channel`, with `token` if not empty.
  static grpc::Status publish(const std::shared_ptr<grpc::Channel>& channel,
                              const std::string& topic,
                              const std::string& token,
                              pb::PublishReply& reply) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    if (!token.empty())
      ctx.AddMetadata("authorization", "Bearer " + token);
    pb::PublishRequest req;
    req.add_messages()->set_topic(topic);
    return pb::Broker::NewStub(channel)->Publish(&ctx, req, &reply);
  }

  std::unique_ptr<broker_process> broker_;
};

TEST_F(AuthTlsTest, TheCertificateSubjectIsTheTokenWithoutABearerToken) {
  auto channel = tls_channel(broker_->address(), "ca.crt", "client");
  pb::PublishReply reply;
  ASSERT_TRUE(publish(channel, "certs.one", "", reply).ok());
  EXPECT_FALSE(reply.results(0).has_error());
  ASSERT_TRUE(publish(channel, "orders.one", "", reply).ok());
  EXPECT_EQ(reply.results(0).error().message(),
            "token \"client-a\" may not publish to \"orders.one\"");
}

TEST_F(AuthTlsTest, ABearerTokenDecidesOverTheCertificate) {
  auto channel = tls_channel(broker_->address(), "ca.crt", "client");
  pb::PublishReply reply;
  ASSERT_TRUE(publish(channel, "orders.one", orders_secret, reply).ok());
  EXPECT_FALSE(reply.results(0).has_error());
  EXPECT_EQ(publish(channel, "certs.one", "wrong-token-0123456789", reply)
                .error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(AuthTlsTest, ACertificateNoTokenNamesIsUnauthenticated) {
  // special-client.crt is signed by the same CA, under another subject.
  auto channel = tls_channel(broker_->address(), "ca.crt", "special-client");
  pb::PublishReply reply;
  auto status = publish(channel, "certs.one", "", reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(status.error_message().find("no token stands for the client "
                                        "certificate \"CN=orders,"),
            std::string::npos)
      << status.error_message();
}

TEST_F(AuthTlsTest, TheCliAndTheClientLibraryConnectWithCaCertificateAndToken) {
  const auto& certs = shared_test_certs();
  auto server = "localhost:" + port_of(broker_->address());
  auto [code, output] =
      run_command(std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-cli",
                  {"--server", server, "--ca", certs.path("ca.crt"), "--cert",
                   certs.path("client.crt"), "--key", certs.path("client.key"),
                   "pub", "certs.cli", "hello"});
  EXPECT_EQ(code, 0) << output;
  // With the orders token over the same certificate, certs.> is refused.
  std::tie(code, output) =
      run_command(std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-cli",
                  {"--server", server, "--ca", certs.path("ca.crt"), "--cert",
                   certs.path("client.crt"), "--key", certs.path("client.key"),
                   "--token", orders_secret, "pub", "certs.cli", "hello"});
  EXPECT_EQ(code, 1) << output;
  EXPECT_NE(output.find("PERMISSION_DENIED"), std::string::npos) << output;
  EXPECT_EQ(output.find(orders_secret), std::string::npos) << output;
  client::security_options security;
  security.ca_file = certs.path("ca.crt");
  security.cert_file = certs.path("client.crt");
  security.key_file = certs.path("client.key");
  security.token = orders_secret;
  client::connection conn{server, security};
  std::vector<pb::PublishResult> results;
  client::outgoing_message message;
  message.topic = "orders.lib";
  message.payload = "x";
  ASSERT_TRUE(conn.publish({message}, &results).ok());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].has_error());
}

} // namespace
} // namespace tb::test
