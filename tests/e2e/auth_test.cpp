// End to end: tokens and their permissions against a real broker (spec 10).

#include "auth_fixture.hpp"
#include "client/connection.hpp"
#include "grpc/health/v1/health.grpc.pb.h"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

TEST_F(AuthTest, NoTokenOrAWrongOneIsUnauthenticatedEverywhere) {
  for (std::string token :
       {std::string{}, std::string{"not-a-valid-token-at-all"}}) {
    token_session session{channel_, token};
    auto status = session.finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
    EXPECT_NE(status.error_message().find("unauthenticated: "),
              std::string::npos)
        << status.error_message();
    EXPECT_EQ(publish(token, {"orders.eu.x"}).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    pb::ListGroupsReply groups;
    auto ctx = context(token);
    EXPECT_EQ(pb::Broker::NewStub(channel_)
                  ->ListGroups(ctx.get(), pb::ListGroupsRequest{}, &groups)
                  .error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  auto b = stats().broker();
  EXPECT_EQ(b.unauthenticated(), 6u);
  EXPECT_EQ(b.refused(), 6u) << "refusals at the door count as refusals";
  // The refusals reach the log (written by the log actor, a moment after
  // the answer); the secrets never do.
  EXPECT_TRUE(broker_->wait_for_output("the token is not valid", patience))
      << broker_->output();
  auto log = broker_->output();
  EXPECT_EQ(log.find("not-a-valid-token-at-all"), std::string::npos) << log;
  EXPECT_EQ(log.find(orders_secret), std::string::npos);
}

TEST_F(AuthTest, HealthChecksNeedNoToken) {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse reply;
  auto ctx = context("");
  ASSERT_TRUE(stub->Check(ctx.get(), req, &reply).ok());
  EXPECT_EQ(reply.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

// Info tells every client the limits it must respect: any valid token may
// ask, admin or not; without a token it is refused like everything else.
TEST_F(AuthTest, InfoNeedsAValidTokenButNoAdminPermission) {
  auto stub = pb::Broker::NewStub(channel_);
  pb::InfoReply info;
  auto ctx = context("");
  EXPECT_EQ(stub->Info(ctx.get(), pb::InfoRequest{}, &info).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  ctx = context(orders_secret);
  ASSERT_TRUE(stub->Info(ctx.get(), pb::InfoRequest{}, &info).ok());
  EXPECT_TRUE(info.auth_enabled());
  EXPECT_FALSE(info.tls_enabled());
  EXPECT_EQ(info.max_message_bytes(), 1u << 20);
}

TEST_F(AuthTest, AdminCallsNeedAnAdminToken) {
  auto stub = pb::Broker::NewStub(channel_);
  pb::CreateGroupRequest create;
  create.set_name("billing");
  create.mutable_settings()->set_pattern("orders.eu.>");
  pb::GroupInfo info;
  auto ctx = context(orders_secret);
  auto status = stub->CreateGroup(ctx.get(), create, &info);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(
      status.error_message().find("token \"orders\" may not call CreateGroup"),
      std::string::npos)
      << status.error_message();
  pb::StatsReply reply;
  ctx = context(orders_secret);
  EXPECT_EQ(stub->Stats(ctx.get(), pb::StatsRequest{}, &reply).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  pb::DeleteGroupRequest del;
  del.set_name("billing");
  pb::DeleteGroupReply deleted;
  ctx = context(orders_secret);
  EXPECT_EQ(stub->DeleteGroup(ctx.get(), del, &deleted).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ctx = context(ops_secret);
  ASSERT_TRUE(stub->CreateGroup(ctx.get(), create, &info).ok());
  ctx = context(ops_secret);
  EXPECT_TRUE(stub->DeleteGroup(ctx.get(), del, &deleted).ok());
  EXPECT_EQ(stats().broker().permission_denied(), 3u);
}

TEST_F(AuthTest, ARefusedPublishReachesNoSubscriberAndNoGroup) {
  token_session watcher{channel_, ops_secret};
  ASSERT_TRUE(watcher.subscribe(1, ">"));
  ASSERT_TRUE(watcher.read_until(kind::kSubscribed));
  token_session member{channel_, ops_secret};
  ASSERT_TRUE(member.subscribe(2, ">", "everything"));
  ASSERT_TRUE(member.read_until(kind::kSubscribed));
  pb::PublishReply reply;
  ASSERT_TRUE(publish(orders_secret,
                      {"orders.eu.1", "invoices.eu.1", "orders.us.1"}, &reply)
                  .ok());
  ASSERT_EQ(reply.results_size(), 3);
  EXPECT_FALSE(reply.results(0).has_error());
  EXPECT_EQ(reply.results(1).error().reason(), "permission_denied");
  EXPECT_EQ(reply.results(1).error().code(), 7);
  EXPECT_FALSE(reply.results(2).has_error());
  // A marker from the admin token: everything before it has arrived.
  ASSERT_TRUE(publish(ops_secret, {"marker"}).ok());
  for (auto* session : {&watcher, &member}) {
    std::vector<std::string> seen;
    while (seen.empty() || seen.back() != "marker") {
      auto frame = session->read_until(kind::kDeliveries);
      ASSERT_TRUE(frame);
      for (auto& d : frame->deliveries().deliveries())
        seen.push_back(d.topic());
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"orders.eu.1", "orders.us.1",
                                              "marker"}));
  }
}

TEST_F(AuthTest, AForbiddenSubscribeIsAnErrorFrameOnAStreamThatStaysOpen) {
  token_session session{channel_, orders_secret};
  ASSERT_TRUE(session.subscribe(1, "orders.>"));
  auto error = session.read_until(kind::kError);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->error().error().code(), 7);
  EXPECT_EQ(error->error().request(), "subscribe");
  ASSERT_TRUE(session.subscribe(2, "orders.eu.>"));
  ASSERT_TRUE(session.read_until(kind::kSubscribed));
  ASSERT_TRUE(session.publish(3, {"orders.eu.ok", "orders.eu.ok2"}));
  auto delivered = session.read_until(kind::kDeliveries);
  ASSERT_TRUE(delivered);
  EXPECT_EQ(delivered->deliveries().deliveries(0).topic(), "orders.eu.ok");
  // Stats names each session's token and counts what it was refused.
  auto reply = stats();
  ASSERT_EQ(reply.sessions_size(), 1);
  EXPECT_EQ(reply.sessions(0).token(), "orders");
  EXPECT_EQ(reply.sessions(0).permission_denied(), 1u);
  EXPECT_EQ(reply.broker().permission_denied(), 1u);
  // The refusal is logged with the token's name.
  EXPECT_TRUE(broker_->wait_for_output(
      "token \\\"orders\\\" may not subscribe to \\\"orders.>\\\"", patience))
      << broker_->output();
}

TEST_F(AuthTest, AMemberShowsItsTokenAndItsClientsName) {
  client::security_options security;
  security.token = orders_secret;
  client::connection conn{broker_->address(), security, "billing-1"};
  auto member = conn.open_session();
  ASSERT_TRUE(member->join(1, "billing", "orders.eu.>"));
  ASSERT_TRUE(member->wait_for(kind::kSubscribed, patience));
  auto reply = stats();
  ASSERT_EQ(reply.groups_size(), 1);
  ASSERT_EQ(reply.groups(0).members_size(), 1);
  auto& m = reply.groups(0).members(0);
  EXPECT_EQ(m.token(), "orders");
  EXPECT_EQ(m.client_name(), "billing-1");
  ASSERT_EQ(reply.sessions_size(), 1);
  EXPECT_EQ(reply.sessions(0).client_name(), "billing-1");
}

TEST_F(AuthTest, SighupRevokesChangesAndAddsTokensWithoutDroppingOthers) {
  token_session orders{channel_, orders_secret};
  ASSERT_TRUE(orders.subscribe(1, "orders.eu.>"));
  ASSERT_TRUE(orders.read_until(kind::kSubscribed));
  token_session ops{channel_, ops_secret};
  ASSERT_TRUE(ops.subscribe(1, "audit.>"));
  ASSERT_TRUE(ops.read_until(kind::kSubscribed));
  // orders is revoked; ops may now publish only under audit.>; late is new.
  auto text = auth_config_text();
  text = text.substr(text.find("[[auth.tokens]]\nname = \"ops\""));
  text.replace(text.find("publish = [\">\"]"), 15, "publish = [\"audit.>\"]");
  reload("[auth]\n" + text + "[[auth.tokens]]\nname = \"late\"\nsecret = \"" +
             late_secret + "\"\npublish = [\"late.>\"]\n",
         "tokens reloaded");
  auto status = orders.finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(status.error_message().find("token \"orders\" was revoked"),
            std::string::npos)
      << status.error_message();
  EXPECT_EQ(publish(orders_secret, {"orders.eu.x"}).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // The log names the token and why its session ended.
  EXPECT_TRUE(
      broker_->wait_for_output("token revoked; ending its session", patience))
      << broker_->output();
  auto out = broker_->output();
  auto at = out.find("token revoked; ending its session");
  EXPECT_NE(out.substr(at, out.find('\n', at) - at).find("token=orders"),
            std::string::npos)
      << out;
  EXPECT_TRUE(broker_->wait_for_output("ended=token_revoked", patience))
      << broker_->output();
  // ops keeps its stream and its subscription, under its new permissions.
  ASSERT_TRUE(ops.publish(2, {"audit.one", "orders.eu.no"}));
  auto confirm = ops.read_until(kind::kPublishConfirm);
  ASSERT_TRUE(confirm);
  EXPECT_FALSE(confirm->publish_confirm().results(0).has_error());
  EXPECT_EQ(confirm->publish_confirm().results(1).error().code(), 7);
  auto delivered = ops.read_until(kind::kDeliveries);
  ASSERT_TRUE(delivered);
  EXPECT_EQ(delivered->deliveries().deliveries(0).topic(), "audit.one");
  EXPECT_TRUE(publish(late_secret, {"late.x"}).ok());
}

TEST_F(AuthTest, AConfigThatDoesNotLoadKeepsTheTokens) {
  reload("[auth]\n[[auth.tokens]]\nname = \"broken\"\n",
         "reload failed, the tokens and the TLS files stay as they were");
  EXPECT_TRUE(publish(orders_secret, {"orders.eu.x"}).ok());
  reload("[auth]\nenabled = false\n", "turning auth on or off takes a restart");
  EXPECT_EQ(publish("", {"orders.eu.x"}).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

} // namespace
} // namespace tb::test
