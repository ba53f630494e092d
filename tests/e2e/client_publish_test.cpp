// End to end: the asynchronous client's publishing: confirms, batching by
// linger time and batch size, flush, and errors with their gRPC status.

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "client_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
using ClientPublishTest = AsyncClientTest;

TEST_F(ClientPublishTest, EachMessageGetsItsConfirmedIdInOrder) {
  auto client = make_client();
  std::vector<std::future<client::publish_result>> confirms;
  for (int i = 0; i < 20; ++i)
    confirms.push_back(client->publish({"orders.eu.created", "m", {}, {}}));
  uint64_t previous = 0;
  for (auto& confirm : confirms) {
    ASSERT_EQ(confirm.wait_for(patience), std::future_status::ready);
    auto result = confirm.get();
    EXPECT_TRUE(result.ok()) << result.status.error_message();
    EXPECT_GT(result.id, previous);
    previous = result.id;
  }
}

TEST_F(ClientPublishTest, WithoutLingerThePublishingThreadWritesTheFrame) {
  auto options = test_options();
  options.linger = 0ms;
  auto client = make_client(options);
  for (int i = 0; i < 20; ++i) {
    auto result = client->publish({"a.b", std::to_string(i), {}, {}}).get();
    EXPECT_TRUE(result.ok()) << result.status.error_message();
  }
  // Each publish found the stream idle: no hand-over to the I/O thread.
  EXPECT_EQ(client->stats().publish_frames, 20u);
  EXPECT_EQ(client->stats().publish_frames_inline, 20u);
}

TEST_F(ClientPublishTest, WithALingerTimeTheIOThreadWritesTheBatches) {
  auto client = make_client(); // linger 5 ms
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(client->publish({"a.b", std::to_string(i), {}, {}}).get().ok());
  EXPECT_EQ(client->stats().publish_frames, 5u);
  EXPECT_EQ(client->stats().publish_frames_inline, 0u);
}

TEST_F(ClientPublishTest, ManyThreadsWithoutLingerKeepEachThreadsOrder) {
  auto options = test_options();
  options.linger = 0ms;
  auto client = make_client(options);
  auto session = subscriber(1, "order.>");
  constexpr int threads = 4;
  constexpr int each = 200;
  std::vector<std::thread> publishers;
  for (int t = 0; t < threads; ++t)
    publishers.emplace_back([&, t] {
      for (int i = 0; i < each; ++i)
        client->publish(
            {"order." + std::to_string(t), std::to_string(i), {}, {}},
            [](const client::publish_result&) {});
    });
  for (auto& thread : publishers)
    thread.join();
  ASSERT_TRUE(client->flush(patience));
  auto got = session->receive(threads * each, patience);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(threads * each));
  std::vector<int> next(threads, 0);
  for (auto& d : got) {
    int t = std::stoi(d.topic().substr(6));
    EXPECT_EQ(d.payload(), std::to_string(next[t])) << d.topic();
    ++next[t];
  }
  // Some went inline, the rest in batches the I/O thread cut meanwhile.
  EXPECT_GT(client->stats().publish_frames_inline, 0u);
}

TEST_F(ClientPublishTest, MessagesWithinTheLingerTimeShareOneFrame) {
  auto options = test_options();
  options.linger = 2s;
  auto client = make_client(options);
  std::vector<std::future<client::publish_result>> confirms;
  for (int i = 0; i < 50; ++i)
    confirms.push_back(client->publish({"a.b", std::to_string(i), {}, {}}));
  // Nothing is sent before the linger time ends...
  EXPECT_EQ(confirms.front().wait_for(quiet_period),
            std::future_status::timeout);
  // ...and then all 50 go in one frame.
  for (auto& confirm : confirms)
    EXPECT_TRUE(confirm.get().ok());
  EXPECT_EQ(client->stats().publish_frames, 1u);
  EXPECT_EQ(client->stats().published, 50u);
}

TEST_F(ClientPublishTest, AFullBatchGoesAtOnceAndFlushSendsTheRest) {
  auto options = test_options();
  options.linger = 1h;
  options.max_batch_messages = 10;
  auto client = make_client(options);
  std::vector<std::future<client::publish_result>> confirms;
  for (int i = 0; i < 35; ++i)
    confirms.push_back(client->publish({"a.b", std::to_string(i), {}, {}}));
  // Three full batches go without waiting for the linger time.
  for (int i = 0; i < 30; ++i)
    ASSERT_EQ(confirms[i].wait_for(patience), std::future_status::ready) << i;
  EXPECT_EQ(confirms[30].wait_for(quiet_period), std::future_status::timeout);
  EXPECT_EQ(client->stats().publish_frames, 3u);
  ASSERT_TRUE(client->flush(patience));
  for (auto& confirm : confirms)
    EXPECT_TRUE(confirm.get().ok());
  EXPECT_EQ(client->stats().publish_frames, 4u);
}

TEST_F(ClientPublishTest, ABadTopicFailsWithInvalidArgumentAndOthersPass) {
  auto client = make_client();
  auto good = client->publish({"a.b", "fine", {}, {}});
  auto bad = client->publish({"bad..topic", "x", {}, {}});
  auto reserved = client->publish({"$sys.x", "x", {}, {}});
  auto callback_result =
      std::make_shared<std::promise<client::publish_result>>();
  client->publish({"", "empty", {}, {}}, [callback_result](auto& result) {
    callback_result->set_value(result);
  });
  ASSERT_TRUE(client->flush(patience));
  EXPECT_TRUE(good.get().ok());
  auto refused = bad.get();
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refused.reason, "invalid_topic");
  EXPECT_NE(refused.status.error_message().find("bad..topic"),
            std::string::npos)
      << refused.status.error_message();
  EXPECT_EQ(refused.id, 0u);
  EXPECT_EQ(reserved.get().status.error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(callback_result->get_future().get().status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ClientPublishTest, AFullPublishQueueFailsWithResourceExhausted) {
  auto options = test_options();
  options.linger = 1h;
  options.max_pending_publishes = 2;
  options.publish_block = 50ms;
  auto client = make_client(options);
  auto first = client->publish({"a.b", "1", {}, {}});
  auto second = client->publish({"a.b", "2", {}, {}});
  auto third = client->publish({"a.b", "3", {}, {}});
  ASSERT_EQ(third.wait_for(patience), std::future_status::ready);
  EXPECT_EQ(third.get().status.error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(client->flush(patience));
  EXPECT_TRUE(first.get().ok());
  EXPECT_TRUE(second.get().ok());
}

TEST_F(ClientPublishTest, CloseSendsWhatLingersAndLaterPublishesFail) {
  auto options = test_options();
  options.linger = 1h;
  auto client = make_client(options);
  auto lingering = client->publish({"a.b", "1", {}, {}});
  client->close();
  EXPECT_TRUE(lingering.get().ok());
  auto late = client->publish({"a.b", "2", {}, {}});
  EXPECT_EQ(late.get().status.error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(client->state(), client::connection_state::closed);
}

// A broker that takes messages of 1 KiB at most.
class SmallLimitPublishTest : public AsyncClientTest {
protected:
  std::vector<std::string> broker_args() override {
    return {
        "--config",
        write_temp_file("[limits]\nmax_message_bytes = \"1KiB\"\n", ".toml")};
  }
};

// Issue 26, point 3: the client reads the broker's max_message_bytes (Info)
// and refuses a larger message itself, naming the limit; nothing is sent,
// and the stream stays up.
TEST_F(SmallLimitPublishTest, AMessageOverTheLimitIsRefusedBeforeSending) {
  auto client = make_client();
  auto at_limit = client->publish({"small.a", std::string(1024, 'x'), {}, {}});
  auto over = client->publish({"small.b", std::string(1025, 'x'), {}, {}});
  auto result = over.get();
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(result.reason, "message_too_large");
  auto text = result.status.error_message();
  EXPECT_NE(text.find("1025 bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("at most 1024 (limits.max_message_bytes)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nothing was sent"), std::string::npos) << text;
  EXPECT_TRUE(at_limit.get().ok());
  EXPECT_EQ(client->stats().connections, 1u);
  auto seventy =
      client->publish({"small.c", std::string(70 << 20, 'x'), {}, {}});
  EXPECT_EQ(seventy.get().reason, "message_too_large");
  EXPECT_TRUE(client->publish({"small.d", "y", {}, {}}).get().ok());
  EXPECT_EQ(client->stats().connections, 1u) << "the stream was never lost";
  EXPECT_EQ(client->stats().published, 2u) << "only the two that fit went";
}

} // namespace
} // namespace tb::test
