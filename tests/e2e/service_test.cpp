// End to end: the process around the broker: start, config, health,
// reflection, shutdown (spec 9, 11).

#include <csignal>
#include <string>

#include "e2e_fixture.hpp"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;

using ServiceTest = BrokerTest;

TEST_F(ServiceTest, HealthServiceReportsServing) {
  auto stub = grpc::health::v1::Health::NewStub(conn_->channel());
  grpc::ClientContext ctx;
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  ASSERT_TRUE(stub->Check(&ctx, request, &response).ok());
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(ServiceTest, ReflectionListsTheBrokerService) {
  using namespace grpc::reflection::v1alpha;
  auto stub = ServerReflection::NewStub(conn_->channel());
  grpc::ClientContext ctx;
  auto stream = stub->ServerReflectionInfo(&ctx);
  ServerReflectionRequest request;
  request.set_list_services("");
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  bool found = false;
  for (auto& service : response.list_services_response().service())
    found = found || service.name() == "tinybroker.v1.Broker";
  EXPECT_TRUE(found);
  stream->Finish();
}

TEST_F(ServiceTest, LogsTheMemoryAllocatorTheBuildChose) {
  // Release builds link jemalloc (docs/performance.md); sanitizer builds
  // keep the sanitizers' allocator.
  auto expected = TINYBROKER_EXPECT_JEMALLOC ? "memory allocator: jemalloc 5"
                                             : "memory allocator: glibc malloc";
  EXPECT_NE(broker_->output().find(expected), std::string::npos)
      << broker_->output();
  // jemalloc gives freed pages back after 1 s, not its default 10 s
  // (net/broker_main.cpp, malloc_conf).
  if (TINYBROKER_EXPECT_JEMALLOC) {
    EXPECT_NE(broker_->output().find("freed pages returned after 1000 ms"),
              std::string::npos)
        << broker_->output();
  }
}

TEST_F(ServiceTest, SigtermEndsStreamsWithUnavailableAndExitsZero) {
  auto session = subscriber(1, "x.>");
  auto code = broker_->stop(SIGTERM);
  ASSERT_TRUE(code.has_value()) << "the broker did not stop in time";
  EXPECT_EQ(*code, 0) << broker_->output();
  while (session->next(patience))
    ; // drain until the stream ends
  ASSERT_TRUE(session->ended());
  EXPECT_EQ(session->status().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(broker_->output().find("stopped"), std::string::npos);
}

TEST_F(ServiceTest, StopsPromptlyWithLiveTopicsAndSubscriptions) {
  // Topic actors live on (topic_idle_timeout is a minute); stopping the
  // broker must stop them too instead of waiting for them to expire.
  auto sub = subscriber(1, "live.>");
  publish({"live.a", "live.b", "unrouted.c"});
  ASSERT_EQ(sub->receive(2, patience).size(), 2u);
  auto code = broker_->stop(SIGTERM, std::chrono::seconds(4));
  ASSERT_TRUE(code.has_value()) << "the broker did not stop in time";
  EXPECT_EQ(*code, 0) << broker_->output();
}

TEST_F(ServiceTest, StopLogsWhatGroupsStillHeld) {
  grpc::ClientContext ctx;
  pb::CreateGroupRequest req;
  req.set_name("audit");
  req.mutable_settings()->set_pattern("audit.>");
  pb::GroupInfo info;
  ASSERT_TRUE(conn_->stub().CreateGroup(&ctx, req, &info).ok());
  publish({"audit.a", "audit.b", "audit.c"});
  auto code = broker_->stop(SIGTERM);
  ASSERT_EQ(code, 0) << broker_->output();
  EXPECT_NE(broker_->output().find("group \"audit\" still held 3 messages"),
            std::string::npos)
      << broker_->output();
}

TEST_F(ServiceTest, SigintStopsTheBrokerWithinTheGracePeriod) {
  // A connected but idle client must not hold the shutdown up: the broker
  // exits well within its 5 s shutdown_grace.
  auto code = broker_->stop(SIGINT, std::chrono::seconds(4));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << broker_->output();
}

TEST(BrokerCommandTest, VersionAndHelp) {
  auto [code, out] = run_broker_command({"--version"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("tinybroker "), std::string::npos) << out;
  std::tie(code, out) = run_broker_command({"--help"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("--config"), std::string::npos) << out;
  EXPECT_NE(out.find("--listen"), std::string::npos) << out;
}

TEST(BrokerCommandTest, UnknownConfigKeyStopsTheStartNamingKeyAndLine) {
  auto path = write_temp_file("listen = \"127.0.0.1:0\"\n\n[limits]\n"
                              "max_mesage_bytes = 10\n",
                              ".toml");
  auto [code, out] = run_broker_command({"--config", path});
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("max_mesage_bytes"), std::string::npos) << out;
  EXPECT_NE(out.find("4"), std::string::npos) << out; // the line
}

TEST(BrokerCommandTest, BadListenAddressIsRefused) {
  auto [code, out] = run_broker_command({"--listen", "nonsense"});
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--listen"), std::string::npos) << out;
}

TEST(BrokerStartTest, StartsWithNoArgumentsOnLoopbackDefaultPort) {
  broker_process broker{{}, broker_process::default_listen};
  ASSERT_TRUE(broker.wait_ready()) << broker.output();
  EXPECT_EQ(broker.address(), "127.0.0.1:7400");
  EXPECT_EQ(broker.stop(SIGTERM), 0);
}

TEST(BrokerStartTest, ConfigFileLimitsApply) {
  auto path = write_temp_file("[limits]\nmax_message_bytes = 100\n", ".toml");
  broker_process broker{{"--config", path}};
  ASSERT_TRUE(broker.wait_ready()) << broker.output();
  client::connection conn{broker.address()};
  std::vector<pb::PublishResult> results;
  ASSERT_TRUE(conn.publish({{"small", std::string(100, 'x'), {}, {}},
                            {"large", std::string(101, 'x'), {}, {}}},
                           &results)
                  .ok());
  ASSERT_EQ(results.size(), 2u);
  EXPECT_FALSE(results[0].has_error());
  EXPECT_EQ(results[1].error().reason(), "message_too_large");
}

} // namespace
} // namespace tb::test
