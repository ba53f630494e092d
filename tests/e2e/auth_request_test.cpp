// End to end: the unary Request call with tokens (docs/security.md): a
// request needs publish rights on its topic, a reply none beyond the open
// request it answers.

#include <future>
#include <memory>

#include "auth_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

/// Sends a unary Request for `topic` presenting `token`.
grpc::Status request(const std::shared_ptr<grpc::Channel>& channel,
                     const std::string& token, const std::string& topic,
                     pb::Response* response) {
  pb::Request req;
  req.mutable_message()->set_topic(topic);
  req.mutable_message()->set_payload("ping");
  req.set_timeout_ms(5000);
  grpc::ClientContext ctx;
  if (!token.empty())
    ctx.AddMetadata("authorization", "Bearer " + token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return pb::Broker::NewStub(channel)->Request(&ctx, req, response);
}

/// Opens a Session stream presenting `secret`, subscribed to `topic` (a
/// test failure and null if the subscribe is not confirmed).
std::unique_ptr<token_session>
subscribed_responder(const std::shared_ptr<grpc::Channel>& channel,
                     const std::string& secret, const std::string& topic) {
  auto responder = std::make_unique<token_session>(channel, secret);
  if (!responder->subscribe(1, topic) ||
      !responder->read_until(kind::kSubscribed)) {
    ADD_FAILURE() << "no subscribe confirmation for " << topic;
    return nullptr;
  }
  return responder;
}

/// Reads the next delivery on `responder`, a request, and answers it with
/// `payload`; returns the delivery (empty, with a test failure, if none).
pb::Delivery answer_next(token_session& responder, const std::string& payload) {
  auto frame = responder.read_until(kind::kDeliveries);
  EXPECT_TRUE(frame);
  if (!frame || frame->deliveries().deliveries_size() != 1) {
    ADD_FAILURE() << "expected one delivery";
    return {};
  }
  auto d = frame->deliveries().deliveries(0);
  EXPECT_NE(d.reply_handle(), 0u);
  pb::ClientFrame reply;
  reply.set_request_id(2);
  reply.mutable_reply()->set_reply_handle(d.reply_handle());
  reply.mutable_reply()->set_payload(payload);
  EXPECT_TRUE(responder.send(reply));
  return d;
}

/// Expects the request `call` to end within 10 s with `payload` in
/// `response`.
void expect_answered(std::future<grpc::Status>& call,
                     const pb::Response& response, const std::string& payload) {
  ASSERT_EQ(call.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto status = call.get();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.payload(), payload);
}

TEST_F(AuthTest, UnaryRequestWithoutPublishRightsIsDeniedNamingTheTopic) {
  // Someone listens, so only the permission can refuse it.
  auto responder = subscribed_responder(channel_, ops_secret, "svc.time");
  ASSERT_TRUE(responder);
  pb::Response response;
  auto status = request(channel_, orders_secret, "svc.time", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << status.error_message();
  EXPECT_NE(status.error_message().find(
                "token \"orders\" may not publish to \"svc.time\""),
            std::string::npos)
      << status.error_message();
  auto b = stats().broker();
  EXPECT_EQ(b.permission_denied(), 1u);
  EXPECT_EQ(b.requests(), 0u) << "a denied request is not routed";
}

TEST_F(AuthTest, UnaryRequestWithPublishRightsGetsTheReply) {
  // "orders" may publish and subscribe under orders.eu.>: it answers its
  // own requests; the reply needs no right of its own.
  auto responder =
      subscribed_responder(channel_, orders_secret, "orders.eu.quote");
  ASSERT_TRUE(responder);
  pb::Response response;
  auto call = std::async(std::launch::async, [&] {
    return request(channel_, orders_secret, "orders.eu.quote", &response);
  });
  auto d = answer_next(*responder, "42 EUR");
  EXPECT_EQ(d.payload(), "ping");
  expect_answered(call, response, "42 EUR");
  EXPECT_EQ(response.message_id(), d.message_id());
  EXPECT_EQ(stats().broker().replies(), 1u);
}

TEST_F(AuthTest, AReplyNeedsNoRightBeyondTheRequestItAnswers) {
  // "listener" may subscribe under svc.> and publish nowhere: it still
  // answers the requests it receives.
  pb::PublishReply refused;
  ASSERT_TRUE(publish(listener_secret, {"svc.time"}, &refused).ok());
  ASSERT_EQ(refused.results_size(), 1);
  EXPECT_EQ(refused.results(0).error().reason(), "permission_denied");
  auto responder = subscribed_responder(channel_, listener_secret, "svc.time");
  ASSERT_TRUE(responder);
  pb::Response response;
  auto call = std::async(std::launch::async, [&] {
    return request(channel_, ops_secret, "svc.time", &response);
  });
  answer_next(*responder, "12:00");
  expect_answered(call, response, "12:00");
  EXPECT_EQ(stats().broker().replies(), 1u);
}

TEST_F(AuthTest, UnaryRequestWithoutATokenIsUnauthenticated) {
  pb::Response response;
  EXPECT_EQ(request(channel_, "", "orders.eu.quote", &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

} // namespace
} // namespace tb::test
