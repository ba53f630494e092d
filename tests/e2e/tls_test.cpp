// End to end: a real broker with `[tls]` (spec 10): clients that trust its
// CA get through, plaintext clients and clients trusting another CA do not;
// with `client_ca`, only clients with a valid certificate from that CA get
// through; a broker with an expired certificate is refused by its clients.

#include <csignal>
#include <string>
#include <vector>

#include "e2e_fixture.hpp"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tls_fixture.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;

// Publishes one message to "tls.check" with the unary call on `channel`
// (which fails at once when the channel cannot connect) and returns the
// call's status.
grpc::Status try_publish(const std::shared_ptr<grpc::Channel>& channel) {
  client::connection conn{channel};
  std::vector<pb::PublishResult> results;
  return conn.publish({{"tls.check", "x", {}, {}}}, &results, patience);
}

// Expects `status` to be a refused connection: UNAVAILABLE, never an answer.
void expect_refused(const grpc::Status& status) {
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

/// A broker with TLS (server certificate only).
class TlsTest : public ::testing::Test {
protected:
  void SetUp() override {
    broker_ = started_broker(
        {"--config", tls_config_file("server.crt", "server.key")});
  }

  void TearDown() override {
    EXPECT_EQ(broker_->stop(SIGTERM), 0) << broker_->output();
  }

  std::unique_ptr<broker_process> broker_;
};

TEST_F(TlsTest, AClientTrustingTheCaPublishesAndSubscribes) {
  client::connection conn{tls_channel(broker_->address(), "ca.crt")};
  ASSERT_TRUE(conn.wait_connected(patience));
  auto session = conn.open_session();
  ASSERT_TRUE(session->subscribe(1, "tls.>"));
  ASSERT_TRUE(session->wait_for(pb::ServerFrame::kSubscribed, patience));
  std::vector<pb::PublishResult> results;
  auto status = conn.publish({{"tls.a", "over TLS", {}, {}}}, &results);
  ASSERT_TRUE(status.ok()) << status.error_message();
  auto got = session->receive(1, patience);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].topic(), "tls.a");
  EXPECT_EQ(got[0].payload(), "over TLS");
  EXPECT_TRUE(session->close().ok());
}

TEST_F(TlsTest, APlaintextClientIsRefused) {
  expect_refused(try_publish(plain_channel(broker_->address())));
  // The broker still serves TLS clients.
  EXPECT_TRUE(try_publish(tls_channel(broker_->address(), "ca.crt")).ok());
}

TEST_F(TlsTest, AClientTrustingAnotherCaIsRefused) {
  expect_refused(try_publish(tls_channel(broker_->address(), "other-ca.crt")));
}

TEST_F(TlsTest, AClientCertificateIsNotNeededWithoutClientCa) {
  EXPECT_TRUE(try_publish(tls_channel(broker_->address(), "ca.crt")).ok());
  EXPECT_TRUE(
      try_publish(tls_channel(broker_->address(), "ca.crt", "client")).ok());
}

TEST_F(TlsTest, HealthSharesThePortAndItsTls) {
  // A plaintext client reaches nothing on the port, health included.
  auto health = [](const std::shared_ptr<grpc::Channel>& channel) {
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    return stub->Check(&ctx, request, &response);
  };
  EXPECT_TRUE(health(tls_channel(broker_->address(), "ca.crt")).ok());
  expect_refused(health(plain_channel(broker_->address())));
}

TEST_F(TlsTest, FailedHandshakesAreRateLimitedInTheLog) {
  // Each plaintext client's connection fails its handshake; a client
  // decides how many, so the log holds at most 5 of them per 10 s.
  for (int i = 0; i < 12; ++i)
    expect_refused(try_publish(plain_channel(broker_->address())));
  ASSERT_TRUE(broker_->wait_for_output("Handshake failed", patience));
  // Ordered after the failures above: the log has taken their lines.
  EXPECT_TRUE(try_publish(tls_channel(broker_->address(), "ca.crt")).ok());
  EXPECT_EQ(broker_->stop(SIGTERM), 0);
  auto out = broker_->output();
  std::size_t lines = 0;
  for (auto at = out.find("grpc: Handshake failed"); at != std::string::npos;
       at = out.find("grpc: Handshake failed", at + 1))
    ++lines;
  EXPECT_GE(lines, 1u) << out;
  EXPECT_LE(lines, 5u) << out;
}

/// A broker with mutual TLS: client certificates from ca.crt required.
class MutualTlsTest : public TlsTest {
protected:
  void SetUp() override {
    broker_ = started_broker(
        {"--config", tls_config_file("server.crt", "server.key", "ca.crt")});
  }
};

TEST_F(MutualTlsTest, AValidClientCertificateIsAccepted) {
  client::connection conn{tls_channel(broker_->address(), "ca.crt", "client")};
  auto session = conn.open_session();
  ASSERT_TRUE(session->subscribe(1, "m.>"));
  ASSERT_TRUE(session->wait_for(pb::ServerFrame::kSubscribed, patience));
  ASSERT_TRUE(conn.publish({{"m.x", "mutual", {}, {}}}).ok());
  EXPECT_EQ(session->receive(1, patience).size(), 1u);
  EXPECT_TRUE(session->close().ok());
}

TEST_F(MutualTlsTest, AClientWithoutCertificateIsRefused) {
  expect_refused(try_publish(tls_channel(broker_->address(), "ca.crt")));
}

TEST_F(MutualTlsTest, ACertificateFromAnotherCaIsRefused) {
  expect_refused(
      try_publish(tls_channel(broker_->address(), "ca.crt", "other-client")));
}

TEST_F(MutualTlsTest, AnExpiredClientCertificateIsRefused) {
  expect_refused(
      try_publish(tls_channel(broker_->address(), "ca.crt", "expired-client")));
  // The same CA's valid certificate still gets through.
  EXPECT_TRUE(
      try_publish(tls_channel(broker_->address(), "ca.crt", "client")).ok());
}

TEST_F(MutualTlsTest, APlaintextClientIsRefused) {
  expect_refused(try_publish(plain_channel(broker_->address())));
}

TEST(TlsExpiredServerTest, AVerifyingClientRefusesAnExpiredServerCertificate) {
  auto broker =
      started_broker({"--config", tls_config_file("expired-server.crt",
                                                  "expired-server.key")});
  expect_refused(try_publish(tls_channel(broker->address(), "ca.crt")));
  EXPECT_EQ(broker->stop(SIGTERM), 0) << broker->output();
}

} // namespace
} // namespace tb::test
