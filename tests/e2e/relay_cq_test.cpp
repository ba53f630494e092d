// End to end: tinybroker-relay-cq, the relay on gRPC's completion-queue API
// (docs/performance.md, "The floors: callback vs completion-queue"), relays
// as tinybroker-relay does, over several streams and completion queues,
// answers what it does not serve, and stops with streams open.

#include <chrono>
#include <csignal>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "broker_process.hpp"
#include "json_fields.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;
using session_stream =
    grpc::ClientReaderWriter<pb::ClientFrame, pb::ServerFrame>;

// How long a step may take before the test gives up.
constexpr std::chrono::milliseconds relay_cq_patience{10000};

// Returns the path of a program built in tools/.
std::string relay_cq_tool(const std::string& name) {
  return std::string{TINYBROKER_TOOLS_DIR} + "/" + name;
}

// A tinybroker-relay-cq on a free loopback port.
class relay_cq_process : public child_process {
public:
  /// Starts `tinybroker-relay-cq --listen 127.0.0.1:0` plus `args`.
  explicit relay_cq_process(std::vector<std::string> args)
      : child_process(relay_cq_tool("tinybroker-relay-cq"),
                      with_listen(std::move(args))) {}

  /// Waits for the relay's address line; returns HOST:PORT or "".
  std::string address() {
    if (!wait_for_output("listening on", relay_cq_patience))
      return "";
    std::smatch match;
    auto out = output();
    if (!std::regex_search(out, match,
                           std::regex{"listening on (127\\.0\\.0\\.1:\\d+)"}))
      return "";
    return match[1];
  }

private:
  static std::vector<std::string> with_listen(std::vector<std::string> args) {
    args.insert(args.begin(), {"--listen", "127.0.0.1:0"});
    return args;
  }
};

// One client stream of the test, with its own context.
struct relay_cq_session {
  grpc::ClientContext context;
  std::unique_ptr<session_stream> stream;
};

// Each test runs against a relay with the parameter's flags: one queue, and
// two queues with spinning (streams then sit on different queues).
class RelayCqTest : public ::testing::TestWithParam<std::vector<std::string>> {
protected:
  void SetUp() override {
    relay = std::make_unique<relay_cq_process>(GetParam());
    address = relay->address();
    ASSERT_FALSE(address.empty()) << relay->output();
    channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    stub = pb::Broker::NewStub(channel);
  }

  // Opens a stream; with `pattern`, subscribes it as `subscription_id`.
  std::unique_ptr<relay_cq_session> open(const std::string& pattern = "",
                                         uint64_t subscription_id = 1) {
    auto s = std::make_unique<relay_cq_session>();
    s->context.set_deadline(std::chrono::system_clock::now() +
                            relay_cq_patience);
    s->stream = stub->Session(&s->context);
    if (!pattern.empty()) {
      pb::ClientFrame frame;
      frame.set_request_id(7);
      frame.mutable_subscribe()->set_subscription_id(subscription_id);
      frame.mutable_subscribe()->set_pattern(pattern);
      EXPECT_TRUE(s->stream->Write(frame));
      pb::ServerFrame answer;
      EXPECT_TRUE(s->stream->Read(&answer));
      EXPECT_EQ(answer.subscribed().subscription_id(), subscription_id);
      EXPECT_EQ(answer.subscribed().request_id(), 7u);
    }
    return s;
  }

  std::unique_ptr<relay_cq_process> relay;
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::Broker::Stub> stub;
};

TEST_P(RelayCqTest, APublishReachesEverySubscribedStream) {
  std::vector<std::unique_ptr<relay_cq_session>> subscribers;
  for (uint64_t id = 1; id <= 3; ++id)
    subscribers.push_back(open("orders.>", id));
  auto publisher = open();
  pb::ClientFrame frame;
  frame.set_request_id(9);
  frame.mutable_publish()->set_confirm(true);
  auto* msg = frame.mutable_publish()->add_messages();
  msg->set_topic("orders.1");
  msg->set_payload("hello");
  ASSERT_TRUE(publisher->stream->Write(frame));
  pb::ServerFrame answer;
  ASSERT_TRUE(publisher->stream->Read(&answer));
  ASSERT_TRUE(answer.has_publish_confirm()) << answer.DebugString();
  EXPECT_EQ(answer.publish_confirm().request_id(), 9u);
  ASSERT_EQ(answer.publish_confirm().results_size(), 1);
  for (uint64_t id = 1; id <= 3; ++id) {
    pb::ServerFrame got;
    ASSERT_TRUE(subscribers[id - 1]->stream->Read(&got));
    ASSERT_EQ(got.deliveries().deliveries_size(), 1) << got.DebugString();
    const auto& d = got.deliveries().deliveries(0);
    EXPECT_EQ(d.subscription_id(), id);
    EXPECT_EQ(d.payload(), "hello");
    EXPECT_EQ(d.message_id(), answer.publish_confirm().results(0).id());
  }
}

TEST_P(RelayCqTest, TheBenchRunsAgainstItWithEveryMessageDelivered) {
  // One publisher and four subscribers (five streams), then the paced rate.
  auto [code, out] = run_command(relay_cq_tool("tinybroker-bench"),
                                 {"--server", address, "--scenario", "s2",
                                  "--messages", "3000", "--batch", "100",
                                  "--paced", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "received"), 4 * 3000) << out;
  std::tie(code, out) = run_command(
      relay_cq_tool("tinybroker-bench"),
      {"--server", address, "--scenario", "s4", "--rate", "2000", "--messages",
       "1000", "--broker-pid", std::to_string(relay->pid()), "--json",
       "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "received"), 1000) << out;
  EXPECT_EQ(json_number(out, "out_of_order"), 0) << out;
  EXPECT_GT(json_number(out, "broker_cpu_s"), 0) << out;
  // The group path, as the callback relay serves it.
  std::tie(code, out) = run_command(
      relay_cq_tool("tinybroker-bench"),
      {"--server", address, "--scenario", "queue", "--workers", "3",
       "--messages", "3000", "--batch", "1", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "missing"), 0) << out;
}

TEST_P(RelayCqTest, TheRoundTripToolMeasuresAgainstIt) {
  auto [code, out] =
      run_command(relay_cq_tool("tinybroker-pingpong"),
                  {"--server", address, "--messages", "500", "--warmup", "50",
                   "--server-pid", std::to_string(relay->pid()), "--json"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "messages"), 500) << out;
  EXPECT_GT(json_number(out, "p50"), 0) << out;
}

TEST_P(RelayCqTest, ASubscriberThatDoesNotReadIsEndedNotBufferedWithoutBound) {
  // The subscriber reads nothing while 6,000 frames of 16 KiB come for it:
  // beyond what gRPC's windows hold, the relay queues at most 4,096 frames,
  // then ends the stream with RESOURCE_EXHAUSTED after the frames before.
  auto slow = open("bulk.>", 1);
  auto publisher = open();
  pb::ClientFrame frame;
  auto* msg = frame.mutable_publish()->add_messages();
  msg->set_topic("bulk.1");
  msg->set_payload(std::string(16 << 10, 'x'));
  for (int i = 0; i < 6000; ++i)
    ASSERT_TRUE(publisher->stream->Write(frame)) << i;
  int read = 0;
  pb::ServerFrame got;
  while (slow->stream->Read(&got))
    ++read;
  auto status = slow->stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
  EXPECT_NE(status.error_message().find("4096 frames"), std::string::npos)
      << status.error_message();
  EXPECT_LT(read, 6000);
  // The publisher's stream goes on.
  frame.mutable_publish()->set_confirm(true);
  ASSERT_TRUE(publisher->stream->Write(frame));
  ASSERT_TRUE(publisher->stream->Read(&got));
  EXPECT_TRUE(got.has_publish_confirm()) << got.DebugString();
}

TEST_P(RelayCqTest, AMethodItDoesNotServeIsUnimplementedNotLeftWaiting) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + relay_cq_patience);
  pb::InfoRequest request;
  pb::InfoReply reply;
  auto status = stub->Info(&context, request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED)
      << status.error_message();
}

TEST_P(RelayCqTest, ItStopsPromptlyWithStreamsOpen) {
  std::vector<std::unique_ptr<relay_cq_session>> open_streams;
  for (uint64_t id = 1; id <= 4; ++id)
    open_streams.push_back(open("idle.>", id));
  auto started = std::chrono::steady_clock::now();
  auto code = relay->stop(SIGTERM, std::chrono::seconds(5));
  ASSERT_TRUE(code.has_value()) << "the relay did not stop with streams open";
  EXPECT_EQ(*code, 0) << relay->output();
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::seconds(3));
  // Every client stream has ended, none waits for its deadline.
  for (auto& s : open_streams) {
    pb::ServerFrame frame;
    EXPECT_FALSE(s->stream->Read(&frame));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Queues, RelayCqTest,
    ::testing::Values(std::vector<std::string>{"--cqs", "1"},
                      std::vector<std::string>{"--cqs", "2", "--spin-us",
                                               "50"}));

TEST(RelayCqFlagsTest, ItRefusesABadQueueCountNamingTheFlag) {
  auto [code, out] =
      run_command(relay_cq_tool("tinybroker-relay-cq"), {"--cqs", "0"});
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("--cqs"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
