// End to end: running the broker unattended (spec 9, 11): one broker per
// port, bounded and prompt shutdown, config errors before anything starts,
// --check-config, and health by service name while serving and draining.

#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include "e2e_fixture.hpp"
#include "grpc/health/v1/health.grpc.pb.h"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;
using health_response = grpc::health::v1::HealthCheckResponse;
using std::chrono::steady_clock;

/// Asks `channel`'s health service for `service`; UNKNOWN if the call fails.
health_response::ServingStatus health(grpc::Channel& channel,
                                      const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(
      std::shared_ptr<grpc::Channel>(&channel, [](grpc::Channel*) {}));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  health_response response;
  if (!stub->Check(&ctx, request, &response).ok())
    return health_response::UNKNOWN;
  return response.status();
}

/// A fan-out subscriber on its own connection that subscribes and then
/// never reads, so the broker's writes to it stall once gRPC's flow
/// control window is full.
class stalled_subscriber {
public:
  /// Subscribes to `pattern` on the broker at `address`.
  stalled_subscriber(const std::string& address, const std::string& pattern)
      : channel_(client::make_channel(address)),
        stub_(pb::Broker::NewStub(channel_)), stream_(stub_->Session(&ctx_)) {
    pb::ClientFrame frame;
    frame.set_request_id(1);
    frame.mutable_subscribe()->set_subscription_id(1);
    frame.mutable_subscribe()->set_pattern(pattern);
    stream_->Write(frame);
  }

  /// Cancels the call; the stream is never read.
  ~stalled_subscriber() {
    ctx_.TryCancel();
  }

private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Broker::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::ClientFrame, pb::ServerFrame>>
      stream_;
};

/// Publishes `count` messages of 128 bytes to `topic` in batches of 1,000.
void publish_many(client::connection& conn, const std::string& topic,
                  size_t count) {
  std::vector<client::outgoing_message> batch(
      1000, client::outgoing_message{topic, std::string(128, 'x'), {}, {}});
  for (size_t sent = 0; sent < count; sent += batch.size()) {
    std::vector<pb::PublishResult> results;
    ASSERT_TRUE(conn.publish(batch, &results).ok());
  }
}

TEST(OneBrokerPerPort, ASecondBrokerOnABusyPortExits1NamingTheCause) {
  broker_process first;
  ASSERT_TRUE(first.wait_ready()) << first.output();
  for (std::string transport : {"callback", "cq"}) {
    child_process second{TINYBROKER_BINARY,
                         {"--listen", first.address(), "--metrics-listen",
                          "off", "--grpc-transport", transport}};
    auto code = second.wait_exit(patience);
    ASSERT_TRUE(code.has_value())
        << "the second broker runs on a busy port, on " << transport;
    auto output = second.output();
    EXPECT_EQ(*code, 1) << output;
    EXPECT_NE(output.find("cannot listen on " + first.address() +
                          ": address already in use"),
              std::string::npos)
        << output;
    EXPECT_EQ(output.find("stopping"), std::string::npos) << output;
    // One line that says it all, not gRPC's own multi-part account too,
    // nor (on cq) what it says of the queue of a server that never started.
    EXPECT_EQ(output.find("No address added"), std::string::npos) << output;
    EXPECT_EQ(output.find("CompletionQueue"), std::string::npos) << output;
  }
  EXPECT_EQ(first.stop(SIGTERM), 0);
}

TEST(OneBrokerPerPort, ABrokerWithItsOwnPoliciesRefusesABusyPortToo) {
  broker_process first;
  ASSERT_TRUE(first.wait_ready()) << first.output();
  child_process second{
      std::string{TINYBROKER_EXAMPLES_DIR} + "/priority_broker",
      {"--listen", first.address(), "--metrics-listen", "off"}};
  auto code = second.wait_exit(patience);
  ASSERT_TRUE(code.has_value()) << "the second broker runs on a busy port";
  EXPECT_EQ(*code, 1) << second.output();
  EXPECT_NE(second.output().find("address already in use"), std::string::npos)
      << second.output();
  EXPECT_EQ(first.stop(SIGTERM), 0);
}

TEST(Shutdown, AnIdleBrokerExitsWellUnderASecond) {
  broker_process broker;
  ASSERT_TRUE(broker.wait_ready()) << broker.output();
  auto start = steady_clock::now();
  auto code = broker.stop(SIGTERM, std::chrono::seconds(5));
  auto took = steady_clock::now() - start;
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << broker.output();
  EXPECT_LT(took, std::chrono::milliseconds(700)) << broker.output();
}

TEST(Shutdown, AClientThatStoppedReadingDoesNotHoldTheExitPastTheGrace) {
  auto config = write_temp_file("shutdown_grace = \"1s\"\n", ".toml");
  broker_process broker{{"--config", config}};
  ASSERT_TRUE(broker.wait_ready()) << broker.output();
  stalled_subscriber stalled{broker.address(), "slow.>"};
  client::connection conn{broker.address()};
  // Far more than the flow control window and the subscription's buffer.
  publish_many(conn, "slow.x", 200'000);
  auto start = steady_clock::now();
  auto code = broker.stop(SIGTERM, std::chrono::seconds(10));
  auto took = steady_clock::now() - start;
  ASSERT_TRUE(code.has_value()) << broker.output();
  EXPECT_EQ(*code, 0) << broker.output();
  EXPECT_LT(took, std::chrono::seconds(2)) << broker.output(); // grace + 1 s
  // Bounded by the shutdown itself, not by the last-resort watchdog.
  EXPECT_EQ(broker.output().find("exiting now"), std::string::npos)
      << broker.output();
}

TEST(Shutdown, AStoppedSubscriberProcessDoesNotHoldTheExitPastTheGrace) {
  // The try from issue 10: a subscriber process stopped with SIGSTOP keeps
  // its connection open but reads nothing, with megabytes queued for it.
  // gRPC then held the exit ~15 s past the grace (its graceful GOAWAY).
  auto config = write_temp_file("shutdown_grace = \"1s\"\n", ".toml");
  broker_process broker{{"--config", config}};
  ASSERT_TRUE(broker.wait_ready()) << broker.output();
  child_process subscriber{std::string{TINYBROKER_TOOLS_DIR} +
                               "/tinybroker-cli",
                           {"--server", broker.address(), "sub", "slow.>"}};
  ASSERT_TRUE(subscriber.wait_for_output("subscribed to slow.>", patience))
      << subscriber.output();
  ::kill(subscriber.pid(), SIGSTOP);
  client::connection conn{broker.address()};
  publish_many(conn, "slow.x", 300'000);
  auto start = steady_clock::now();
  auto code = broker.stop(SIGTERM, std::chrono::seconds(30));
  auto took = steady_clock::now() - start;
  ::kill(subscriber.pid(), SIGCONT);
  ASSERT_TRUE(code.has_value()) << broker.output();
  EXPECT_EQ(*code, 0) << broker.output();
  EXPECT_LT(took, std::chrono::seconds(2)) << broker.output(); // grace + 1 s
  EXPECT_EQ(broker.output().find("exiting now"), std::string::npos)
      << broker.output();
}

TEST(Health, AnswersForTheServiceNameAndTheServer) {
  broker_process broker;
  ASSERT_TRUE(broker.wait_ready()) << broker.output();
  auto channel = client::make_channel(broker.address());
  EXPECT_EQ(health(*channel, "tinybroker.v1.Broker"), health_response::SERVING);
  EXPECT_EQ(health(*channel, ""), health_response::SERVING);
  EXPECT_EQ(broker.stop(SIGTERM), 0);
}

TEST(Health, IsNotServingWhileTheBrokerDrains) {
  auto config = write_temp_file("shutdown_grace = \"3s\"\n", ".toml");
  broker_process broker{{"--config", config}};
  ASSERT_TRUE(broker.wait_ready()) << broker.output();
  stalled_subscriber stalled{broker.address(), "slow.>"};
  client::connection conn{broker.address()};
  publish_many(conn, "slow.x", 100'000); // keeps the drain waiting
  auto channel = client::make_channel(broker.address());
  ASSERT_EQ(health(*channel, "tinybroker.v1.Broker"), health_response::SERVING);
  // A Watch hears the change too, while the drain still waits.
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext watch_ctx;
  grpc::health::v1::HealthCheckRequest watched;
  watched.set_service("tinybroker.v1.Broker");
  auto watch = stub->Watch(&watch_ctx, watched);
  health_response seen;
  ASSERT_TRUE(watch->Read(&seen));
  ASSERT_EQ(seen.status(), health_response::SERVING);
  ::kill(broker.pid(), SIGTERM);
  ASSERT_TRUE(broker.wait_for_output("shutting down", patience));
  ASSERT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), health_response::NOT_SERVING);
  auto deadline = steady_clock::now() + std::chrono::seconds(2);
  auto service = health_response::SERVING;
  auto overall = health_response::SERVING;
  while (steady_clock::now() < deadline &&
         (service == health_response::SERVING ||
          overall == health_response::SERVING)) {
    service = health(*channel, "tinybroker.v1.Broker");
    overall = health(*channel, "");
  }
  EXPECT_EQ(service, health_response::NOT_SERVING);
  EXPECT_EQ(overall, health_response::NOT_SERVING);
  watch->Finish(); // the stop ends the Watch
  EXPECT_EQ(broker.wait_exit(patience), 0) << broker.output();
}

TEST(ConfigErrors, AMissingConfigFileExits2WithTheDocumentedMessage) {
  auto [code, out] = run_broker_command({"--config", "/nonexistent/tb.toml"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("cannot open config file /nonexistent/tb.toml: No such "
                     "file or directory"),
            std::string::npos)
      << out;
  std::tie(code, out) = run_broker_command({"--config", "/tmp"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("cannot open config file /tmp: it is a directory"),
            std::string::npos)
      << out;
}

TEST(ConfigErrors, AnUnknownPolicyExits2BeforeAnythingIsLogged) {
  auto path = write_temp_file("[groups.y]\npattern = \"y.>\"\n"
                              "policy = \"nope\"\n",
                              ".toml");
  auto [code, out] = run_broker_command({"--config", path});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find(path + ":3:"), std::string::npos) << out;
  EXPECT_NE(out.find("groups.y.policy: unknown policy \"nope\""),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("INFO"), std::string::npos) << out;
}

TEST(ConfigErrors, ABadOptionExits2) {
  auto [code, out] = run_broker_command({"--no-such-option"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--no-such-option"), std::string::npos) << out;
}

TEST(CheckConfig, AValidFilePrintsTheEffectiveConfigAndExits0) {
  auto path = write_temp_file("listen = \"127.0.0.1:7499\"\n"
                              "[groups.jobs]\npattern = \"jobs.>\"\n",
                              ".toml");
  auto [code, out] = run_broker_command({"--check-config", path});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("listen 127.0.0.1:7499"), std::string::npos) << out;
  EXPECT_NE(out.find("group jobs: pattern jobs.>"), std::string::npos) << out;
  EXPECT_NE(out.find("the config is valid"), std::string::npos) << out;
  EXPECT_EQ(out.find("listening on"), std::string::npos) << out;
}

TEST(CheckConfig, AnInvalidFileListsEveryProblemAndExits2) {
  auto path = write_temp_file("shutdown_grace = \"soon\"\n"
                              "[groups.y]\npattern = \"y.>\"\n"
                              "dead_letter = \"y.dead\"\n",
                              ".toml");
  auto [code, out] = run_broker_command({"--check-config", path});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find(path + ":1:"), std::string::npos) << out;
  EXPECT_NE(out.find(path + ":4:"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
