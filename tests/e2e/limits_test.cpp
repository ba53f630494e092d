// End to end: broker-wide limits from the config file (spec 7,
// docs/configuration.md): the most sessions, groups and topics. A request
// beyond a limit is refused with RESOURCE_EXHAUSTED naming the limit, and
// the broker goes on serving everything else.

#include <string>
#include <vector>

#include "e2e_fixture.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;

/// A broker with 2 sessions, 1 group and 2 topics at most.
class LimitsTest : public BrokerTest {
protected:
  std::vector<std::string> broker_args() override {
    return {"--config", write_temp_file("[limits]\n"
                                        "max_sessions = 2\n"
                                        "max_groups = 1\n"
                                        "max_topics = 2\n",
                                        ".toml")};
  }
};

TEST_F(LimitsTest, AStreamBeyondMaxSessionsEndsWithResourceExhausted) {
  auto first = subscriber(1, "a");
  auto second = subscriber(1, "b");
  auto third = conn_->open_session();
  while (third->next(patience))
    ; // the broker ends it at once
  ASSERT_TRUE(third->ended());
  EXPECT_EQ(third->status().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(third->status().error_message().find("max_sessions = 2"),
            std::string::npos)
      << third->status().error_message();
  // A freed place is taken again, once the broker released the stream
  // (just after the client saw it end).
  EXPECT_TRUE(first->close().ok());
  std::unique_ptr<client::session> fourth;
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!fourth && std::chrono::steady_clock::now() < deadline) {
    auto candidate = conn_->open_session();
    // A refused stream may end before the subscribe is even written.
    if (candidate->subscribe(1, "c") &&
        candidate->wait_for(pb::ServerFrame::kSubscribed, patience)) {
      fourth = std::move(candidate);
      break;
    }
    while (candidate->next(patience))
      ; // until the broker ended it
    EXPECT_EQ(candidate->status().error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  ASSERT_TRUE(fourth) << "no session accepted after one ended";
  publish({"c"});
  EXPECT_EQ(fourth->receive(1, patience).size(), 1u);
}

TEST_F(LimitsTest, GroupsAndTopicsBeyondTheirLimitsAreRefusedOneByOne) {
  grpc::ClientContext ctx;
  pb::CreateGroupRequest req;
  req.set_name("one");
  req.mutable_settings()->set_pattern("one.>");
  pb::GroupInfo info;
  ASSERT_TRUE(conn_->stub().CreateGroup(&ctx, req, &info).ok());
  grpc::ClientContext ctx2;
  req.set_name("two");
  auto status = conn_->stub().CreateGroup(&ctx2, req, &info);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("max_groups = 1"), std::string::npos)
      << status.error_message();

  std::vector<pb::PublishResult> results;
  ASSERT_TRUE(conn_
                  ->publish({{"t.1", "a", {}, {}},
                             {"t.2", "b", {}, {}},
                             {"t.3", "c", {}, {}}},
                            &results)
                  .ok());
  ASSERT_EQ(results.size(), 3u);
  EXPECT_FALSE(results[0].has_error());
  EXPECT_FALSE(results[1].has_error());
  EXPECT_EQ(results[2].error().reason(), "limit_exceeded");
  EXPECT_NE(results[2].error().message().find("max_topics = 2"),
            std::string::npos)
      << results[2].error().message();
}

} // namespace
} // namespace tb::test
