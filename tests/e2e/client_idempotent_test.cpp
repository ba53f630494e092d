// End to end: idempotent publishing (issue 28). Messages with the same
// msg_id are confirmed as duplicates and delivered once; an idempotent
// client whose connection is cut mid-publish (through a TCP proxy) sends
// its unconfirmed messages again after reconnecting, and every subscriber
// and group gets each message exactly once: 0 lost, 0 doubled.

#include <future>
#include <map>
#include <string>
#include <vector>

#include "client_fixture.hpp"
#include "tcp_proxy.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
using ClientIdempotentTest = AsyncClientTest;

TEST_F(ClientIdempotentTest, SameMsgIdIsConfirmedAsDuplicateAndDeliveredOnce) {
  auto client = make_client();
  delivery_log log;
  auto sub = client->subscribe("idem.>", log.handler());
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  client::outgoing_message msg{"idem.1", "first", {}, {}};
  msg.msg_id = "order-42";
  auto first = client->publish(msg).get();
  ASSERT_TRUE(first.ok()) << first.status.error_message();
  EXPECT_FALSE(first.duplicate);
  // Another client, as after a restart of the publisher.
  auto other = make_client();
  msg.payload = "again";
  auto second = other->publish(msg).get();
  ASSERT_TRUE(second.ok()) << second.status.error_message();
  EXPECT_TRUE(second.duplicate);
  EXPECT_EQ(second.id, first.id);
  ASSERT_TRUE(client->publish({"idem.1", "end", {}, {}}).get().ok());
  EXPECT_EQ(log.wait_for(2).size(), 2u);
  EXPECT_EQ(log.payloads(), (std::vector<std::string>{"first", "end"}));
}

TEST_F(ClientIdempotentTest, BinaryMsgIdsAreDeduplicatedToo) {
  // Issue 28: msg_id is a bytes field; bytes that are not UTF-8 are an id
  // like any other (the client used to refuse them, the broker to end the
  // stream).
  auto client = make_client();
  client::outgoing_message msg{"idem.bin", "first", {}, {}};
  msg.msg_id = std::string{"\xff\x00\x80\xc3", 4};
  auto first = client->publish(msg).get();
  ASSERT_TRUE(first.ok()) << first.status.error_message();
  EXPECT_FALSE(first.duplicate);
  auto second = client->publish(msg).get();
  ASSERT_TRUE(second.ok()) << second.status.error_message();
  EXPECT_TRUE(second.duplicate);
  EXPECT_EQ(second.id, first.id);
  msg.msg_id.back() = '\xc4'; // another id
  auto third = client->publish(msg).get();
  ASSERT_TRUE(third.ok()) << third.status.error_message();
  EXPECT_FALSE(third.duplicate);
}

TEST_F(ClientIdempotentTest, CutConnectionsMidPublishLoseAndDoubleNothing) {
  constexpr int total = 3000;
  constexpr int cuts = 4; // after 600, 1200, 1800 and 2400 messages
  // Subscriber and group member straight to the broker; the publisher
  // through the proxy that cuts its connection.
  auto consumer = make_client();
  subscriber_and_worker logs{*consumer, "idem.>", "idem-workers"};
  auto& fanout = logs.fanout;
  auto& worker = logs.worker;

  tcp_proxy proxy{broker_->address()};
  auto options = test_options();
  options.idempotent = true;
  options.reconnect_max_attempts = 100;
  auto publisher =
      std::make_unique<client::async_client>(proxy.address(), options);
  ASSERT_TRUE(publisher->wait_connected(patience));

  std::vector<std::future<client::publish_result>> confirms;
  confirms.reserve(total);
  for (int i = 0; i < total; ++i) {
    confirms.push_back(publisher->publish(
        {"idem." + std::to_string(i % 7), "m" + std::to_string(i), {}, {}}));
    // Cut while the messages just queued are unsent or unconfirmed: some of
    // the broker's confirms are lost, some frames never arrive.
    if ((i + 1) % (total / (cuts + 1)) == 0 && i + 1 < total) {
      // Connected again since the last cut (a connection per cut so far).
      auto cut = (i + 1) / (total / (cuts + 1));
      ASSERT_TRUE(eventually([&] {
        return proxy.accepted() == cut &&
               publisher->state() == client::connection_state::connected;
      }));
      // Let a frame or two go out, not all of them confirmed: at the
      // broker's speed on the cq transport, 2 ms often saw every message
      // of the segment confirmed (nothing to resend).
      std::this_thread::sleep_for(200us);
      proxy.cut();
    }
  }
  int failed = 0;
  int duplicates = 0;
  for (auto& confirm : confirms) {
    ASSERT_EQ(confirm.wait_for(4 * patience), std::future_status::ready);
    auto result = confirm.get();
    if (!result.ok())
      ++failed;
    if (result.duplicate)
      ++duplicates;
  }
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(proxy.accepted(), cuts + 1) << "a cut found no connection";
  EXPECT_GT(publisher->stats().republished, 0u) << "nothing was resent";

  // Everything confirmed is routed: a last message marks the end.
  ASSERT_TRUE(consumer->publish({"idem.end", "end", {}, {}}).get().ok());
  ASSERT_EQ(fanout.wait_for(total + 1).size(), total + 1u);
  ASSERT_TRUE(
      eventually([&] { return worker.payloads().size() >= total + 1; }));
  std::this_thread::sleep_for(100ms); // a late copy would show up now
  for (auto [name, log] :
       {std::pair{"fan-out", &fanout}, {"worker", &worker}}) {
    std::map<std::string, int> seen;
    for (auto& payload : log->payloads())
      ++seen[payload];
    int lost = 0;
    int doubled = 0;
    std::string missing; // the first few, to tell a path from its pattern
    for (int i = 0; i < total; ++i) {
      auto n = seen["m" + std::to_string(i)];
      if (n == 0 && ++lost <= 20)
        missing += " m" + std::to_string(i);
      doubled += n > 1;
    }
    EXPECT_EQ(lost, 0) << name << " missing:" << missing;
    EXPECT_EQ(doubled, 0) << name;
  }
  std::cout << "cuts: " << cuts << ", connections: " << proxy.accepted()
            << ", resent: " << publisher->stats().republished
            << ", confirmed as duplicates: " << duplicates << "\n";
}

} // namespace
} // namespace tb::test
