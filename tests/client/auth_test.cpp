// The C++ client's token and TLS against a stand-in broker: the bearer
// token arrives on unary calls and Session streams of `connection` and
// `async_client` (also after a reconnect), over plain channels, TLS and
// mutual TLS; wrong CAs, names and missing client certificates fail.

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "client/async_client.hpp"
#include "client/connection.hpp"
#include "fake_broker.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

constexpr auto patience = 10s;
constexpr auto bearer = "Bearer s3cret-token";

// The certificates, made once for every test here.
const fake_pki& certs() {
  static const fake_pki made = make_fake_pki();
  return made;
}

// Returns TLS settings that trust the test CA, with `token`.
client::security_options tls_with(const std::string& token) {
  client::security_options options;
  options.token = token;
  options.ca_file = certs().ca;
  return options;
}

// Returns a fake broker serving TLS (mutual if `mutual`) that wants
// `token` (any if empty).
fake_broker_options tls_broker(bool mutual = false, std::string token = "") {
  fake_broker_options options;
  options.token = std::move(token);
  options.tls = true;
  options.certs = certs();
  options.require_client_cert = mutual;
  return options;
}

// Returns a plain fake broker that wants `token`.
fake_broker_options wanting(const std::string& token) {
  fake_broker_options options;
  options.token = token;
  return options;
}

// Publishes one message with `conn` and returns the call's status.
grpc::Status publish_one(client::connection& conn) {
  return conn.publish({{"orders.eu", "x", {}, {}}}, nullptr, 5s);
}

// Opens a session on `conn`, subscribes and expects the Subscribed frame.
void expect_session_works(client::connection& conn) {
  auto session = conn.open_session();
  ASSERT_TRUE(session->subscribe(1, "orders.>", "", 7));
  auto frame = session->wait_for(pb::ServerFrame::kSubscribed, patience);
  ASSERT_TRUE(frame.has_value()) << session->status().error_message();
  EXPECT_TRUE(session->close(patience).ok());
}

TEST(ClientAuth, ConnectionSendsTheTokenOnUnaryCallsAndStreams) {
  fake_broker broker{wanting("s3cret-token")};
  client::security_options security;
  security.token = "s3cret-token";
  client::connection conn{broker.address(), security};
  ASSERT_TRUE(publish_one(conn).ok());
  expect_session_works(conn);
  grpc::ClientContext ctx;
  pb::StatsReply reply;
  ASSERT_TRUE(conn.stub().Stats(&ctx, {}, &reply).ok());
  for (auto* method : {"/Publish", "/Session", "/Stats"}) {
    auto call = broker.wait_call(method, patience);
    ASSERT_TRUE(call.has_value()) << method;
    EXPECT_EQ(call->authorization, bearer) << method;
  }
}

TEST(ClientAuth, WithoutATokenNoAuthorizationIsSentAndTheRefusalArrives) {
  fake_broker broker{wanting("s3cret-token")};
  client::connection conn{broker.address()};
  auto status = publish_one(conn);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(status.error_message(), "fake broker: missing or wrong token");
  auto session = conn.open_session();
  EXPECT_FALSE(session->next(patience).has_value());
  EXPECT_EQ(session->status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  for (auto& call : broker.calls())
    EXPECT_FALSE(call.authorization.has_value()) << call.method;
}

TEST(ClientAuth, AsyncClientSendsTheTokenOnEveryStreamAndUnaryCall) {
  fake_broker_options fake;
  fake.token = "s3cret-token";
  fake.end_first_session = true; // the client must reconnect
  fake_broker broker{fake};
  client::client_options options;
  options.security.token = "s3cret-token";
  options.reconnect_initial_backoff = 10ms;
  client::async_client client{broker.address(), options};
  auto sub = client.subscribe("orders.>", [](client::delivery) {});
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  ASSERT_TRUE(client.wait_connected(patience));
  EXPECT_GE(client.stats().connections, 2u);
  ASSERT_TRUE(client.create_group("workers", {}).ok());
  client.close();
  auto calls = broker.calls();
  int sessions = 0;
  for (auto& call : calls) {
    sessions += call.method == "/tinybroker.v1.Broker/Session";
    EXPECT_EQ(call.authorization, bearer) << call.method;
  }
  EXPECT_GE(sessions, 2);
  EXPECT_TRUE(broker.wait_call("/CreateGroup", patience).has_value());
}

TEST(ClientAuth, ConnectionSendsTheTokenOverTlsToAnIpOrAName) {
  fake_broker broker{tls_broker(false, "s3cret-token")};
  for (auto& address : {broker.address(), broker.localhost_address()}) {
    client::connection conn{address, tls_with("s3cret-token")};
    ASSERT_TRUE(publish_one(conn).ok()) << address;
    expect_session_works(conn);
  }
  for (auto& call : broker.calls())
    EXPECT_EQ(call.authorization, bearer) << call.method;
  // Per address: Info (the broker's limits.max_message_bytes, asked before
  // the first publish), Publish and Session.
  EXPECT_EQ(broker.calls().size(), 6u);
}

TEST(ClientAuth, TlsWithAnotherCaOrAPlainChannelDoesNotConnect) {
  fake_broker broker{tls_broker()};
  auto other = tls_with("");
  other.ca_file = certs().other_ca;
  client::connection wrong_ca{broker.address(), other};
  EXPECT_EQ(publish_one(wrong_ca).error_code(), grpc::StatusCode::UNAVAILABLE);
  client::connection plain{broker.address()};
  EXPECT_EQ(publish_one(plain).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(broker.calls().empty());
}

TEST(ClientAuth, TheServerNameOverrideIsWhatTheCertificateIsCheckedFor) {
  fake_broker broker{tls_broker()};
  auto named = tls_with("");
  named.server_name = "localhost";
  client::connection good{broker.address(), named};
  EXPECT_TRUE(publish_one(good).ok());
  named.server_name = "wrong.example";
  client::connection bad{broker.address(), named};
  EXPECT_EQ(publish_one(bad).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(ClientAuth, MutualTlsPresentsTheClientCertificate) {
  fake_broker broker{tls_broker(true, "s3cret-token")};
  auto without = tls_with("s3cret-token");
  client::connection refused{broker.address(), without};
  EXPECT_EQ(publish_one(refused).error_code(), grpc::StatusCode::UNAVAILABLE);
  auto with = without;
  with.cert_file = certs().client_cert;
  with.key_file = certs().client_key;
  client::connection conn{broker.address(), with};
  ASSERT_TRUE(publish_one(conn).ok());
  auto call = broker.wait_call("/Publish", patience);
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->client_cn, "client-a");
  EXPECT_EQ(call->authorization, bearer);
}

TEST(ClientAuth, AsyncClientSpeaksMutualTlsWithTheToken) {
  fake_broker broker{tls_broker(true, "s3cret-token")};
  client::client_options options;
  options.security = tls_with("s3cret-token");
  options.security.cert_file = certs().client_cert;
  options.security.key_file = certs().client_key;
  client::async_client client{broker.localhost_address(), options};
  ASSERT_TRUE(client.wait_connected(patience));
  auto result = client.publish({"orders.eu", "x", {}, {}}).get();
  EXPECT_TRUE(result.ok()) << result.status.error_message();
  client.close();
  auto call = broker.wait_call("/Session", patience);
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->authorization, bearer);
  EXPECT_EQ(call->client_cn, "client-a");
}

TEST(ClientAuth, AsyncClientGetsAForbiddenSubscribeAsPermissionDenied) {
  fake_broker broker{wanting("s3cret-token")};
  client::client_options options;
  options.security.token = "s3cret-token";
  client::async_client client{broker.address(), options};
  auto sub = client.subscribe("forbidden.>", [](client::delivery) {});
  auto status = sub->wait_subscribed(patience);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(status.error_message(), "fake broker: pattern not allowed");
  auto other = client.subscribe("orders.>", [](client::delivery) {});
  EXPECT_TRUE(other->wait_subscribed(patience).ok()); // the stream stays
}

TEST(ClientAuth, AsyncClientWithAnUnreadableKeyThrowsSecurityError) {
  client::client_options options;
  options.security.cert_file = certs().client_cert;
  options.security.key_file = "/nonexistent/client.key";
  EXPECT_THROW(client::async_client("127.0.0.1:1", options),
               client::security_error);
}

} // namespace
} // namespace tb::test
