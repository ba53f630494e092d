// The C++ client refuses strings that are not UTF-8 before sending them
// (issue 15): the check's messages name the field and the byte offset, and
// `connection`, `session` and `async_client` send nothing of such a
// request, against a stand-in broker that records what arrives.

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/async_client.hpp"
#include "client/check.hpp"
#include "client/connection.hpp"
#include "fake_broker.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

constexpr auto patience = 10s;

// Returns the number of calls of `method` (e.g. "/Publish") `broker` got.
int calls_of(const fake_broker& broker, const std::string& method) {
  int n = 0;
  for (auto& call : broker.calls())
    n += call.method.size() >= method.size() &&
         call.method.compare(call.method.size() - method.size(), method.size(),
                             method) == 0;
  return n;
}

// -- the check ----------------------------------------------------------------

TEST(ClientCheck, NamesTheFieldTheByteOffsetAndTheByte) {
  EXPECT_TRUE(client::check_utf8("topic", "orders.eu").ok());
  EXPECT_TRUE(client::check_utf8("topic", "caf\xc3\xa9").ok());
  auto status = client::check_utf8("topic", "x.\xff");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "topic \"x.\\xff\" is not UTF-8 (at byte offset 2: 0xff)");
  // UTF-8 before the bad byte is quoted as it is.
  EXPECT_EQ(client::check_utf8("pattern", "\xc3\xa9t\xc3").error_message(),
            "pattern \"\xc3\xa9t\\xc3\" is not UTF-8 (at byte offset 3: 0xc3)");
}

TEST(ClientCheck, QuotesAtMost64BytesOfALongValue) {
  auto value = std::string(200, 'a') + "\xfe";
  auto text = client::check_utf8("key", value).error_message();
  EXPECT_NE(text.find("\"" + std::string(64, 'a') + "\"..."), std::string::npos)
      << text;
  EXPECT_NE(text.find("(at byte offset 200: 0xfe)"), std::string::npos) << text;
}

TEST(ClientCheck, ChecksTopicKeyAndHeadersOfAMessage) {
  client::outgoing_message msg{"a.b", "payload \xff is bytes", {}, {}};
  EXPECT_TRUE(client::check_strings(msg).ok()); // the payload is not text
  msg.key = "k\xed\xa0\x80";                    // a surrogate
  EXPECT_NE(client::check_strings(msg).error_message().find(
                "message.key \"k\\xed\\xa0\\x80\" is not UTF-8 (at byte "
                "offset 1: 0xed)"),
            std::string::npos);
  msg.key.clear();
  msg.headers["tr\xff"] = "x";
  EXPECT_NE(client::check_strings(msg).error_message().find(
                "message.headers key \"tr\\xff\""),
            std::string::npos);
  msg.headers.clear();
  msg.headers["trace"] = "\xc0\xaf";
  EXPECT_NE(client::check_strings(msg).error_message().find(
                "message.headers[\"trace\"] \"\\xc0\\xaf\""),
            std::string::npos);
}

TEST(ClientCheck, AMsgIdIsBytesNotText) {
  // Issue 28: Message.msg_id is a bytes field, so any bytes may be sent.
  client::outgoing_message msg{"a.b", "x", {}, {}};
  msg.msg_id = std::string{"\xff\x00\x01", 3};
  EXPECT_TRUE(client::check_strings(msg).ok())
      << client::check_strings(msg).error_message();
  pb::Message wire;
  client::to_proto(msg, wire);
  EXPECT_EQ(wire.msg_id().size(), 3u);
  EXPECT_TRUE(client::check_strings(wire).ok());
}

TEST(ClientCheck, NamesTheRequestFieldOfFramesAndCalls) {
  pb::ClientFrame frame;
  frame.mutable_subscribe()->set_pattern("a.>");
  frame.mutable_subscribe()->add_tags("eu");
  frame.mutable_subscribe()->add_tags("\xff");
  EXPECT_EQ(client::check_strings(frame).error_message().substr(0, 16),
            "subscribe.tags[1");
  frame.mutable_subscribe()->set_group("g\xff");
  EXPECT_EQ(client::check_strings(frame).error_message().substr(0, 15),
            "subscribe.group");
  frame.mutable_publish()->add_messages()->set_topic("ok");
  frame.mutable_publish()->add_messages()->set_topic("bad\xff");
  EXPECT_EQ(client::check_strings(frame).error_message().substr(0, 31),
            "publish.messages[1].topic \"bad\\");
  frame.mutable_ack()->add_delivery_ids(1);
  EXPECT_TRUE(client::check_strings(frame).ok());
  pb::PublishRequest request;
  request.add_messages()->set_topic("x\xff");
  EXPECT_EQ(client::check_strings(request).error_message().substr(0, 17),
            "messages[0].topic");
  pb::CreateGroupRequest create;
  create.set_name("workers");
  create.mutable_settings()->set_dead_letter("dlq.\xff");
  EXPECT_EQ(client::check_strings(create).error_message().substr(0, 20),
            "settings.dead_letter");
}

// -- nothing is sent ----------------------------------------------------------

TEST(ClientName, ANameIsCheckedAndTravelsPercentEncoded) {
  EXPECT_TRUE(client::check_client_name("").ok());
  EXPECT_TRUE(client::check_client_name("worker-3 ✓").ok());
  EXPECT_TRUE(client::check_client_name(std::string(128, 'x')).ok());
  auto too_long = client::check_client_name(std::string(129, 'x'));
  EXPECT_EQ(too_long.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(too_long.error_message().find("129 bytes; at most 128"),
            std::string::npos)
      << too_long.error_message();
  auto control = client::check_client_name("a\nb");
  EXPECT_NE(control.error_message().find("control character"),
            std::string::npos)
      << control.error_message();
  auto c1 = client::check_client_name("a\xc2\x85"
                                      "b");
  EXPECT_NE(c1.error_message().find("control character"), std::string::npos)
      << c1.error_message();
  auto not_utf8 = client::check_client_name("caf\xc3");
  EXPECT_NE(not_utf8.error_message().find("not UTF-8"), std::string::npos)
      << not_utf8.error_message();
  EXPECT_EQ(client::encode_client_name("worker-3"), "worker-3");
  EXPECT_EQ(client::encode_client_name("50% ✓"), "50%25 %E2%9C%93");
}

TEST(ClientName, EveryCallOfAConnectionAndTheAsyncClientCarriesIt) {
  fake_broker broker;
  {
    client::connection conn{broker.address(), {}, "billing ✓"};
    EXPECT_TRUE(conn.publish({{"t", "x", {}, {}}}).ok());
    auto own = conn.open_session("worker-2");
    EXPECT_TRUE(own->close().ok());
  }
  {
    client::client_options options;
    options.name = "async-1";
    client::async_client async{broker.address(), options};
    auto sub = async.subscribe("t.>", [](client::delivery) {});
    ASSERT_TRUE(sub->wait_subscribed(patience).ok());
    ASSERT_TRUE(async.create_group("workers", {}).ok());
    async.close();
  }
  std::vector<std::string> seen;
  for (auto& call : broker.calls())
    seen.push_back(call.method.substr(call.method.rfind('/')) + " " +
                   call.client_name.value_or("(none)"));
  EXPECT_NE(std::find(seen.begin(), seen.end(), "/Publish billing %E2%9C%93"),
            seen.end());
  EXPECT_NE(std::find(seen.begin(), seen.end(), "/Session worker-2"),
            seen.end());
  EXPECT_NE(std::find(seen.begin(), seen.end(), "/Session async-1"),
            seen.end());
  EXPECT_NE(std::find(seen.begin(), seen.end(), "/CreateGroup async-1"),
            seen.end());
  EXPECT_THROW(client::connection(broker.address(), {}, "a\tb"),
               client::invalid_request);
  client::client_options bad;
  bad.name = std::string(129, 'n');
  EXPECT_THROW(client::async_client(broker.address(), bad),
               client::invalid_request);
}

TEST(ClientCheck, ConnectionPublishAnswersInvalidArgumentWithoutACall) {
  fake_broker broker;
  client::connection conn{broker.address()};
  std::vector<pb::PublishResult> results;
  auto status = conn.publish({{"ok", "1", {}, {}}, {"x.\xff", "2", {}, {}}},
                             &results, patience);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("messages[1].topic"), std::string::npos)
      << status.error_message();
  EXPECT_TRUE(results.empty());
  ASSERT_TRUE(conn.publish({{"ok", "1", {}, {}}}, nullptr, patience).ok());
  EXPECT_EQ(calls_of(broker, "/Publish"), 1); // only the good one
}

TEST(ClientCheck, SessionThrowsAndTheStreamGoesOn) {
  fake_broker broker;
  client::connection conn{broker.address()};
  auto session = conn.open_session();
  try {
    session->subscribe(1, "x.\xff");
    ADD_FAILURE() << "no invalid_request thrown";
  } catch (const client::invalid_request& e) {
    EXPECT_EQ(e.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(std::string{e.what()},
              "subscribe.pattern \"x.\\xff\" is not UTF-8 (at byte offset "
              "2: 0xff)");
  }
  EXPECT_THROW(session->publish({{"a", "", {{"k", "\xff"}}, {}}}),
               client::invalid_request);
  EXPECT_THROW(session->join(3, "g\xff", "a.>"), client::invalid_request);
  // The stream is open, and the first answer is to the next good request:
  // the refused ones never left.
  ASSERT_TRUE(session->subscribe(2, "orders.>"));
  auto frame = session->next(patience);
  ASSERT_TRUE(frame.has_value()) << session->status().error_message();
  ASSERT_TRUE(frame->has_subscribed());
  EXPECT_EQ(frame->subscribed().subscription_id(), 2u);
  EXPECT_TRUE(session->close(patience).ok());
}

TEST(ClientCheck, AsyncClientRefusesPublishSubscribeAndCreateGroup) {
  fake_broker broker;
  client::async_client client{broker.address()};
  auto result = client.publish({"x.\xff", "hi", {}, {}}).get();
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(result.id, 0u);
  EXPECT_NE(result.status.error_message().find("message.topic"),
            std::string::npos);
  auto sub = client.subscribe("x.\xff", [](client::delivery) {
    ADD_FAILURE() << "a delivery to a refused subscription";
  });
  auto status = sub->wait_subscribed(patience);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("subscribe.pattern"),
            std::string::npos);
  EXPECT_FALSE(sub->active());
  pb::GroupSettings settings;
  settings.set_pattern("jobs.\xff");
  EXPECT_EQ(client.create_group("workers", settings).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // The client goes on: a good subscribe and publish work.
  auto good = client.subscribe("orders.>", [](client::delivery) {});
  ASSERT_TRUE(good->wait_subscribed(patience).ok());
  EXPECT_TRUE(client.publish({"orders.eu", "hi", {}, {}}).get().ok());
  client.close();
  EXPECT_EQ(calls_of(broker, "/CreateGroup"), 0);
  EXPECT_EQ(client.stats().published, 1u);
}

} // namespace
} // namespace tb::test
