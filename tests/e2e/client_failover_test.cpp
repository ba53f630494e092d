// End to end: the asynchronous client given several addresses (issue 30,
// point 5) against two independent brokers: it connects to the first that
// answers, and when that one dies it goes on with the next one with its
// subscriptions, its group memberships and (idempotent) its unconfirmed
// publishes; none reachable ends it with a status naming every address.

#include <csignal>
#include <future>
#include <string>
#include <vector>

#include <signal.h>

#include "cli_fixture.hpp"
#include "client/check.hpp"
#include "client_fixture.hpp"
#include "failover_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;

TEST_F(FailoverTest, SubscriptionsAndGroupsGoOnWithTheNextBroker) {
  auto client = both();
  EXPECT_EQ(client->address(), a_->address());
  subscriber_and_worker logs{*client, "orders.>", "workers"};
  auto& fanout = logs.fanout;
  auto& worker = logs.worker;
  auto& sub = logs.sub;
  auto& member = logs.member;
  {
    auto on_a = only(a_->address());
    ASSERT_TRUE(on_a->publish({"orders.1", "on A", {}, {}}).get().ok());
    ASSERT_EQ(fanout.wait_for(1).size(), 1u);
    ASSERT_EQ(worker.wait_for(1).size(), 1u);
  }

  kill_a();
  ASSERT_TRUE(eventually([&] {
    return sub->times_subscribed() == 2 && member->times_subscribed() == 2;
  })) << "not subscribed again; state "
      << static_cast<int>(client->state());
  EXPECT_EQ(client->address(), b_->address());

  // Published on B by another client: only the restored subscription and
  // membership can bring it.
  auto on_b = only(b_->address());
  ASSERT_TRUE(on_b->publish({"orders.2", "on B", {}, {}}).get().ok());
  fanout.wait_for(2);
  worker.wait_for(2);
  EXPECT_EQ(fanout.payloads(), (std::vector<std::string>{"on A", "on B"}));
  EXPECT_EQ(worker.payloads(), (std::vector<std::string>{"on A", "on B"}));
  EXPECT_TRUE(sub->active());
  EXPECT_TRUE(member->active());
}

TEST_F(FailoverTest, IdempotentPublishesUnconfirmedByTheDeadBrokerGoToTheNext) {
  auto options = failover_options();
  options.idempotent = true;
  auto publisher = both(options);
  ASSERT_EQ(publisher->address(), a_->address());
  auto on_a = only(a_->address());
  auto on_b = only(b_->address());
  delivery_log seen_a, seen_b;
  ASSERT_TRUE(
      on_a->subscribe("n.>", seen_a.handler())->wait_subscribed(patience).ok());
  ASSERT_TRUE(
      on_b->subscribe("n.>", seen_b.handler())->wait_subscribed(patience).ok());
  constexpr int before = 100, total = 300;
  std::vector<std::future<client::publish_result>> confirms;
  for (int i = 0; i < before; ++i)
    confirms.push_back(publisher->publish({"n.x", std::to_string(i), {}, {}}));
  for (auto& confirm : confirms)
    ASSERT_TRUE(confirm.get().ok());
  ASSERT_EQ(seen_a.wait_for(before).size(), static_cast<size_t>(before));

  // A stops reading: what follows is written to it but never confirmed;
  // then it dies. Every thread of A is stopped before the first of them.
  ASSERT_TRUE(a_->pause());
  confirms.clear();
  for (int i = before; i < total; ++i)
    confirms.push_back(publisher->publish({"n.x", std::to_string(i), {}, {}}));
  std::this_thread::sleep_for(200ms);
  kill_a();

  for (int i = before; i < total; ++i) {
    auto result = confirms[i - before].get();
    EXPECT_TRUE(result.ok())
        << "message " << i << ": " << result.status.error_message();
  }
  EXPECT_EQ(publisher->address(), b_->address());
  EXPECT_GT(publisher->stats().republished, 0u);
  // Every message the client was told was confirmed after the failover is
  // at B's subscriber, once, in publish order.
  auto got = seen_b.wait_for(total - before);
  std::vector<std::string> expected;
  for (int i = before; i < total; ++i)
    expected.push_back(std::to_string(i));
  EXPECT_EQ(seen_b.payloads(), expected);
}

TEST_F(FailoverTest, AnUnreachableFirstAddressIsPassedAtOnce) {
  closed_port dead;
  auto started = std::chrono::steady_clock::now();
  // The comma-separated form of a target.
  client::async_client client{dead.address() + "," + b_->address(),
                              failover_options()};
  ASSERT_TRUE(client.wait_connected(patience));
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 1s)
      << "took "
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms";
  EXPECT_EQ(client.address(), b_->address());
  EXPECT_TRUE(client.publish({"x.y", "hello", {}, {}}).get().ok());
}

TEST_F(FailoverTest, NoneReachableEndsNamingEveryAddress) {
  closed_port first, second;
  auto options = failover_options();
  options.reconnect_max_attempts = 2;
  options.on_error = [](const grpc::Status&) {
  };
  client::async_client client{
      std::vector<std::string>{first.address(), second.address()}, options};
  auto status = client.wait_closed(patience);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("gave up after 4 failed attempts to "
                                        "reach any of the 2 brokers at " +
                                        first.address() + ", " +
                                        second.address()),
            std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find(second.address() + ": "),
            std::string::npos)
      << status.error_message();
}

TEST_F(FailoverTest, AnEmptyAddressInATargetIsRefusedNamingIt) {
  try {
    tb::client::async_client probe{a_->address() + ",,", failover_options()};
    FAIL() << "no error";
  } catch (const tb::client::invalid_request& e) {
    EXPECT_NE(std::string{e.what()}.find("an empty broker address in \"" +
                                         a_->address() + ",,\""),
              std::string::npos)
        << e.what();
  }
}

TEST_F(FailoverTest, AddressesAreShuffledByDefault) {
  // NATS's default: clients given the same list spread over the nodes. Of
  // 40 clients given [A, B], both brokers get some (all on one: 2^-39).
  int on_a = 0, on_b = 0;
  auto options = failover_options();
  options.randomize_addresses = true;
  for (int i = 0; i < 40; ++i) {
    client::async_client client{
        std::vector<std::string>{a_->address(), b_->address()}, options};
    (client.address() == a_->address() ? on_a : on_b) += 1;
  }
  EXPECT_GT(on_a, 0);
  EXPECT_GT(on_b, 0);
}

} // namespace
} // namespace tb::test
