// End to end: the asynchronous client's subscriptions: fan-out callbacks
// with wildcards, unsubscribe, and refusals surfaced with their status.

#include <string>
#include <vector>

#include "client_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
using ClientSubscribeTest = AsyncClientTest;
using strings = std::vector<std::string>;

TEST_F(ClientSubscribeTest, WildcardSubscriptionsGetMatchingMessagesInOrder) {
  auto client = make_client();
  delivery_log created, orders;
  auto a = client->subscribe("orders.*.created", created.handler());
  auto b = client->subscribe("orders.>", orders.handler());
  ASSERT_TRUE(a->wait_subscribed(patience).ok());
  ASSERT_TRUE(b->wait_subscribed(patience).ok());
  for (auto topic : {"orders.eu.created", "shipping.eu.created",
                     "orders.eu.paid", "orders.us.created"})
    client->publish({topic, topic, {}, {}});
  ASSERT_TRUE(client->flush(patience));
  orders.wait_for(3);
  created.wait_for(2);
  EXPECT_EQ(orders.payloads(), (strings{"orders.eu.created", "orders.eu.paid",
                                        "orders.us.created"}));
  EXPECT_EQ(created.payloads(),
            (strings{"orders.eu.created", "orders.us.created"}));
}

TEST_F(ClientSubscribeTest, AfterUnsubscribeNoCallbackRunsAndOnEndSaysOk) {
  auto client = make_client();
  delivery_log log;
  client::subscribe_options options;
  options.on_end = log.on_end();
  auto sub = client->subscribe("a.>", log.handler(), options);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  client->publish({"a.1", "before", {}, {}});
  ASSERT_EQ(log.wait_for(1).size(), 1u);
  sub->unsubscribe();
  auto end = log.wait_end();
  ASSERT_TRUE(end.has_value());
  EXPECT_TRUE(end->ok());
  EXPECT_FALSE(sub->active());
  // A second subscriber proves the later message was routed.
  delivery_log witness;
  auto other = client->subscribe("a.>", witness.handler());
  ASSERT_TRUE(other->wait_subscribed(patience).ok());
  client->publish({"a.2", "after", {}, {}});
  ASSERT_EQ(witness.wait_for(1).size(), 1u);
  EXPECT_EQ(log.payloads(), strings{"before"});
}

TEST_F(ClientSubscribeTest, ABadPatternIsRefusedWithInvalidArgument) {
  auto client = make_client();
  delivery_log log;
  client::subscribe_options options;
  options.on_end = log.on_end();
  auto sub = client->subscribe("orders.>.x", log.handler(), options);
  auto status = sub->wait_subscribed(patience);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("orders.>.x"), std::string::npos)
      << status.error_message();
  auto end = log.wait_end();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(sub->active());
  // The stream stays usable.
  EXPECT_TRUE(client->publish({"a.b", "x", {}, {}}).get().ok());
}

TEST_F(ClientSubscribeTest, JoiningAGroupWithAnotherPatternFailsPrecondition) {
  auto client = make_client();
  delivery_log first, second;
  client::subscribe_options options;
  options.group = "billing";
  auto a = client->subscribe("invoices.>", first.handler(), options);
  ASSERT_TRUE(a->wait_subscribed(patience).ok());
  auto b = client->subscribe("orders.>", second.handler(), options);
  EXPECT_EQ(b->wait_subscribed(patience).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(ClientSubscribeTest, ADeletedGroupEndsItsMembersWithAborted) {
  auto client = make_client();
  delivery_log log;
  client::subscribe_options options;
  options.group = "doomed";
  options.on_end = log.on_end();
  auto sub = client->subscribe("jobs.>", log.handler(), options);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  tinybroker::v1::DeleteGroupRequest request;
  request.set_name("doomed");
  tinybroker::v1::DeleteGroupReply reply;
  grpc::ClientContext ctx;
  ASSERT_TRUE(client->unary().stub().DeleteGroup(&ctx, request, &reply).ok());
  auto end = log.wait_end();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::ABORTED);
  EXPECT_FALSE(sub->active());
}

} // namespace
} // namespace tb::test
