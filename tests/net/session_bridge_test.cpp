// The end reason a session bridge gives its stream when the client stops
// sending: a half-close, a cancel known when the read ends, and a cancel
// the completion-queue form learns of only later, from the call's done
// notification (net/session_cq.cpp). The session's last log line says
// this reason (`ended=...`).

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "net/session_bridge.hpp"

namespace tb {
namespace {

// A stream that records what its bridge asks of it and completes nothing.
class recording_stream final : public session_stream {
public:
  void start_read(grpc::ByteBuffer*) override {
    ++reads;
  }

  void start_write(const grpc::ByteBuffer*, grpc::WriteOptions) override {
    ++writes;
  }

  void finish(const grpc::Status& status) override {
    ++finishes;
    finished_with = status;
  }

  int reads = 0;
  int writes = 0;
  int finishes = 0;
  std::optional<grpc::Status> finished_with;
};

class SessionBridgeEndTest : public ::testing::Test {
protected:
  recording_stream stream;
  session_bridge bridge{&stream, 8, "ipv4:127.0.0.1:1"};
};

TEST_F(SessionBridgeEndTest, AHalfCloseEndsAsClientClosed) {
  bridge.on_read_done(false, false);
  bridge.finish(ec::none, ""); // the session drained
  EXPECT_EQ(bridge.end_reason(), "client_closed");
  ASSERT_EQ(stream.finishes, 1);
  EXPECT_TRUE(stream.finished_with->ok());
}

TEST_F(SessionBridgeEndTest, ACancelKnownWhenTheReadEndsEndsAsClientCancelled) {
  bridge.on_read_done(false, true);
  bridge.finish(ec::none, "");
  EXPECT_EQ(bridge.end_reason(), "client_cancelled");
}

TEST_F(SessionBridgeEndTest,
       ACancelLearnedAfterTheReadEndedStillSaysCancelled) {
  // The completion-queue form reported a half-close (no done notification
  // yet), then the done notification said the call was cancelled while
  // the session was still draining.
  bridge.on_read_done(false, false);
  bridge.on_cancel_known();
  bridge.finish(ec::none, "");
  EXPECT_EQ(bridge.end_reason(), "client_cancelled");
  EXPECT_EQ(stream.finishes, 1); // finished once all the same
}

TEST_F(SessionBridgeEndTest, ACancelLearnedAfterTheFinishChangesNothing) {
  bridge.on_read_done(false, false);
  bridge.finish(ec::none, "");
  bridge.on_cancel_known(); // the client cancelled after the broker finished
  EXPECT_EQ(bridge.end_reason(), "client_closed");
}

TEST_F(SessionBridgeEndTest, ACancelLearnedLaterKeepsAnEarlierReason) {
  // The broker ended the stream for a reason of its own first.
  bridge.on_read_done(false, false);
  bridge.finish(ec::shutting_down, "the broker is shutting down");
  bridge.on_cancel_known();
  EXPECT_EQ(bridge.end_reason(), "broker_shutdown");
}

} // namespace
} // namespace tb
