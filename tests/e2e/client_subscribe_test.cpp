// End to end: the asynchronous client's subscriptions: fan-out callbacks
// with wildcards, unsubscribe, and refusals surfaced with their status.

#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
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

// The thread a handler ran on, recorded once.
struct thread_seen {
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<std::thread::id> id;

  void record() {
    std::lock_guard<std::mutex> guard{mutex};
    id = std::this_thread::get_id();
    cv.notify_all();
  }

  std::optional<std::thread::id> wait() {
    std::unique_lock<std::mutex> guard{mutex};
    cv.wait_for(guard, patience, [this] { return id.has_value(); });
    return id;
  }
};

TEST_F(ClientSubscribeTest, OnReaderThreadRunsTheHandlerWhereFramesAreRead) {
  auto client = make_client();
  thread_seen inline_handler, queued_handler, confirm;
  client::subscribe_options on_reader;
  on_reader.on_reader_thread = true;
  auto fast = client->subscribe(
      "hop.a", [&](client::delivery) { inline_handler.record(); }, on_reader);
  auto usual = client->subscribe(
      "hop.b", [&](client::delivery) { queued_handler.record(); });
  ASSERT_TRUE(fast->wait_subscribed(patience).ok());
  ASSERT_TRUE(usual->wait_subscribed(patience).ok());
  // A publish's callback runs on the reader thread (docs/client.md).
  client->publish({"hop.a", "x", {}, {}},
                  [&](const client::publish_result&) { confirm.record(); });
  client->publish({"hop.b", "x", {}, {}});
  ASSERT_TRUE(client->flush(patience));
  auto reader = confirm.wait();
  auto fast_thread = inline_handler.wait();
  auto usual_thread = queued_handler.wait();
  ASSERT_TRUE(reader && fast_thread && usual_thread);
  EXPECT_EQ(*fast_thread, *reader);
  EXPECT_NE(*usual_thread, *reader);
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

TEST_F(ClientSubscribeTest, SubscribeManySendsBatchesAndRefusesOnlyTheBadOne) {
  // 300 patterns, one of them bad: two SubscribeBatch frames (256 + 44);
  // the bad entry ends with INVALID_ARGUMENT, the 299 others stand.
  auto client = make_client();
  delivery_log log;
  strings patterns;
  for (int i = 0; i < 300; ++i)
    patterns.push_back(i == 150 ? "many.>.bad" : "many." + std::to_string(i));
  auto subs = client->subscribe_many(patterns, log.handler());
  ASSERT_EQ(subs.size(), patterns.size());
  for (size_t i = 0; i < subs.size(); ++i) {
    EXPECT_EQ(subs[i]->pattern(), patterns[i]);
    auto status = subs[i]->wait_subscribed(patience);
    if (i == 150) {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_FALSE(subs[i]->active());
    } else {
      EXPECT_TRUE(status.ok()) << patterns[i] << ": " << status.error_message();
    }
  }
  EXPECT_EQ(client->stats().subscribe_frames, 2u);
  client->publish({"many.299", "last", {}, {}});
  EXPECT_EQ(log.wait_for(1).size(), 1u);
  EXPECT_EQ(log.payloads(), strings{"last"});
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

TEST_F(ClientSubscribeTest, AHandlerThatThrowsIsReportedAndDeliveryGoesOn) {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<grpc::Status> errors;
  auto options = test_options();
  options.on_error = [&](const grpc::Status& status) {
    std::lock_guard<std::mutex> guard{mutex};
    errors.push_back(status);
    cv.notify_all();
  };
  auto client = make_client(options);
  delivery_log log;
  auto sub = client->subscribe("a.>", log.handler([](client::delivery& d) {
    if (d.payload() == "bad")
      throw std::runtime_error("cannot parse \"bad\"");
  }));
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  client->publish({"a.1", "bad", {}, {}});
  client->publish({"a.2", "good", {}, {}});
  EXPECT_EQ(log.wait_for(2).size(), 2u);
  std::unique_lock<std::mutex> guard{mutex};
  ASSERT_TRUE(cv.wait_for(guard, patience, [&] { return !errors.empty(); }));
  EXPECT_EQ(errors[0].error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_NE(errors[0].error_message().find("cannot parse"), std::string::npos)
      << errors[0].error_message();
  EXPECT_TRUE(sub->active());
}

// A broker whose fan-out subscriptions buffer only a few messages.
class ClientSlowSubscriberTest : public AsyncClientTest {
protected:
  std::vector<std::string> broker_args() override {
    return {"--config",
            write_temp_file("[limits]\nsubscription_buffer = 4\n", ".toml")};
  }
};

TEST_F(ClientSlowSubscriberTest, ASlowSubscriberIsToldWhatItLost) {
  auto options = test_options();
  options.max_queued_callbacks = 1; // the reader waits for the handler
  auto client = make_client(options);
  std::mutex mutex;
  std::condition_variable cv;
  bool released = false;
  uint64_t received = 0, lost = 0;
  client::subscribe_options watch;
  watch.on_dropped = [&](uint64_t count) {
    std::lock_guard<std::mutex> guard{mutex};
    lost += count;
    cv.notify_all();
  };
  auto sub = client->subscribe(
      "bulk.>",
      [&](client::delivery) {
        std::unique_lock<std::mutex> guard{mutex};
        cv.wait(guard, [&] { return released; });
        ++received;
        cv.notify_all();
      },
      watch);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  constexpr uint64_t total = 300;
  client::async_client publisher{broker_->address(), test_options()};
  for (uint64_t i = 0; i < total; ++i)
    publisher.publish({"bulk.x", std::string(4096, 'x'), {}, {}});
  ASSERT_TRUE(publisher.flush(patience));
  {
    std::lock_guard<std::mutex> guard{mutex};
    released = true;
    cv.notify_all();
  }
  std::unique_lock<std::mutex> guard{mutex};
  EXPECT_TRUE(
      cv.wait_for(guard, patience, [&] { return received + lost == total; }))
      << received << " received, " << lost << " lost";
  EXPECT_GT(lost, 0u);
}

} // namespace
} // namespace tb::test
