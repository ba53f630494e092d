// End to end: bad input gets an error that names the problem and the
// stream stays usable (spec 7).

#include <string>
#include <vector>

#include "e2e_fixture.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;

constexpr int invalid_argument = 3;
constexpr int not_found = 5;
constexpr int resource_exhausted = 8;

using ErrorsTest = BrokerTest;

// Waits for an error frame on `session` and checks what it names.
void expect_error_frame(client::session& session, uint64_t request_id,
                        const std::string& request, int code,
                        const std::string& reason) {
  auto frame = session.wait_for(pb::ServerFrame::kError, patience);
  ASSERT_TRUE(frame.has_value()) << "no error frame for " << request;
  auto& err = frame->error();
  EXPECT_EQ(err.request_id(), request_id);
  EXPECT_EQ(err.request(), request);
  EXPECT_EQ(err.error().code(), code);
  EXPECT_EQ(err.error().reason(), reason);
  EXPECT_FALSE(err.error().message().empty());
}

// Checks that `session` still subscribes and receives.
void expect_still_usable(BrokerTest& test, client::session& session,
                         client::connection& conn, uint64_t id) {
  auto topic = "still.works." + std::to_string(id);
  ASSERT_TRUE(session.subscribe(id, topic));
  ASSERT_TRUE(session.wait_for(pb::ServerFrame::kSubscribed, patience));
  ASSERT_TRUE(conn.publish({{topic, "ok", {}, {}}}).ok());
  auto got = session.receive(1, patience);
  ASSERT_EQ(got.size(), 1u) << "the stream is no longer usable";
  (void)test;
}

TEST_F(ErrorsTest, BadTopicIsRefusedPerMessageAndTheRestRouted) {
  auto sub = subscriber(1, "good.>");
  std::vector<pb::PublishResult> results;
  ASSERT_TRUE(conn_
                  ->publish({{"good.one", "1", {}, {}},
                             {"bad..topic", "2", {}, {}},
                             {"good.*", "3", {}, {}},
                             {"good.two", "4", {}, {}}},
                            &results)
                  .ok());
  ASSERT_EQ(results.size(), 4u);
  EXPECT_FALSE(results[0].has_error());
  EXPECT_EQ(results[1].error().code(), invalid_argument);
  EXPECT_EQ(results[1].error().reason(), "invalid_topic");
  EXPECT_NE(results[1].error().message().find("bad..topic"), std::string::npos);
  EXPECT_EQ(results[2].error().reason(), "invalid_topic");
  EXPECT_FALSE(results[3].has_error());
  EXPECT_EQ(topics_of(sub->receive(2, patience)),
            std::vector<std::string>({"good.one", "good.two"}));
}

TEST_F(ErrorsTest, BadPatternGetsAnErrorFrameAndTheStreamGoesOn) {
  auto session = conn_->open_session();
  ASSERT_TRUE(session->subscribe(1, "orders.>.created", "", 17));
  expect_error_frame(*session, 17, "subscribe", invalid_argument,
                     "invalid_pattern");
  expect_still_usable(*this, *session, *conn_, 2);
}

TEST_F(ErrorsTest, DuplicateSubscriptionIdIsRefused) {
  auto session = subscriber(1, "a.b");
  ASSERT_TRUE(session->subscribe(1, "c.d", "", 5));
  expect_error_frame(*session, 5, "subscribe", invalid_argument,
                     "invalid_request");
  expect_still_usable(*this, *session, *conn_, 2);
}

TEST_F(ErrorsTest, UnknownSubscriptionIsNotFound) {
  auto session = conn_->open_session();
  ASSERT_TRUE(session->unsubscribe(99, 3));
  expect_error_frame(*session, 3, "unsubscribe", not_found,
                     "unknown_subscription");
  expect_still_usable(*this, *session, *conn_, 1);
}

TEST_F(ErrorsTest, OversizedMessageIsRefusedInTheConfirm) {
  auto session = conn_->open_session();
  std::string big((1 << 20) + 1, 'x');
  ASSERT_TRUE(session->publish({{"big.one", big, {}, {}}}, true, 8));
  auto frame = session->wait_for(pb::ServerFrame::kPublishConfirm, patience);
  ASSERT_TRUE(frame.has_value());
  ASSERT_EQ(frame->publish_confirm().results_size(), 1);
  auto& result = frame->publish_confirm().results(0);
  EXPECT_EQ(result.id(), 0u);
  EXPECT_EQ(result.error().code(), invalid_argument);
  EXPECT_EQ(result.error().reason(), "message_too_large");
  expect_still_usable(*this, *session, *conn_, 1);
}

TEST_F(ErrorsTest, RefusalsWithoutConfirmGetAnErrorFrame) {
  auto sub = subscriber(1, "fine");
  ASSERT_TRUE(sub->publish({{"fine", "1", {}, {}},
                            {"$sys.x", "2", {}, {}},
                            {"bad topic", "3", {}, {}}},
                           false, 21));
  auto frame = sub->wait_for(pb::ServerFrame::kError, patience);
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->error().request_id(), 21u);
  EXPECT_EQ(frame->error().request(), "publish");
  EXPECT_EQ(frame->error().error().reason(), "reserved_topic");
  EXPECT_NE(frame->error().error().message().find("2 of 3"), std::string::npos)
      << frame->error().error().message();
  EXPECT_EQ(topics_of(sub->receive(1, patience)),
            std::vector<std::string>({"fine"}));
}

TEST_F(ErrorsTest, TooLargeABatchIsAResourceLimit) {
  std::vector<client::outgoing_message> batch(4097, {"many.small", "", {}, {}});
  auto status = conn_->publish(batch);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("4097"), std::string::npos);
  auto session = conn_->open_session();
  ASSERT_TRUE(session->publish(batch, true, 4));
  expect_error_frame(*session, 4, "publish", resource_exhausted,
                     "limit_exceeded");
  expect_still_usable(*this, *session, *conn_, 1);
}

TEST_F(ErrorsTest, EmptyFrameIsRefusedAndTheStreamGoesOn) {
  auto session = conn_->open_session();
  pb::ClientFrame empty;
  empty.set_request_id(12);
  ASSERT_TRUE(session->send(empty));
  expect_error_frame(*session, 12, "unknown", invalid_argument,
                     "invalid_request");
  expect_still_usable(*this, *session, *conn_, 1);
}

} // namespace
} // namespace tb::test
