// The end reason a session bridge gives its stream when the client stops
// sending: a half-close, a cancel known when the read ends, and a cancel
// the completion-queue form learns of only later, from the call's done
// notification (net/session_cq.cpp). The session's last log line says
// this reason (`ended=...`). And the order of a read's effects: the next
// read starts after the writes the frame caused.

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <caf/event_based_actor.hpp>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <gtest/gtest.h>

#include "actors/atoms.hpp"
#include "net/session_bridge.hpp"
#include "tests/support/handoff_system.hpp"
#include "tinybroker.pb.h"

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

// A stream that logs the reads and writes its bridge starts, in order, and
// keeps the buffer of the last read, for the test to fill.
class ordered_stream final : public session_stream {
public:
  void start_read(grpc::ByteBuffer* bytes) override {
    std::lock_guard<std::mutex> guard{mutex};
    calls.push_back("read");
    reading = bytes;
  }

  void start_write(const grpc::ByteBuffer*, grpc::WriteOptions) override {
    std::lock_guard<std::mutex> guard{mutex};
    calls.push_back("write");
  }

  void finish(const grpc::Status&) override {
    std::lock_guard<std::mutex> guard{mutex};
    calls.push_back("finish");
  }

  std::mutex mutex;
  std::vector<std::string> calls;
  grpc::ByteBuffer* reading = nullptr;
};

// The next read starts once the actors the frame woke ran on the reading
// thread: gRPC announces the stream's window when a read starts, and after
// the subscribers' writes that announcement goes out with them, not in a
// socket write of its own (docs/performance.md, "Instructions per
// message"). The stand-in session actor writes one frame per frame read.
TEST(SessionBridgeReadOrder, TheNextReadStartsAfterTheWritesTheFrameCaused) {
  test::system_with s{"handoff"};
  ordered_stream stream;
  session_bridge bridge{&stream, 8, "ipv4:127.0.0.1:1"};
  std::atomic<std::thread::id> ran_on{};
  auto writer = s.sys->spawn([&bridge, &ran_on](caf::event_based_actor* self) {
    self->set_default_handler(caf::drop);
    return caf::behavior{
        [&bridge, &ran_on](frame_atom, const client_frame_ptr&) {
          ran_on.store(std::this_thread::get_id());
          auto answer = std::make_unique<tinybroker::v1::ServerFrame>();
          answer->mutable_publish_confirm()->set_request_id(1);
          bridge.write(std::move(answer));
        }};
  });
  ASSERT_TRUE(test::workers_asleep(*s.sys));
  bridge.start(caf::actor_cast<session_actor>(writer));
  ASSERT_NE(stream.reading, nullptr);
  tinybroker::v1::ClientFrame frame;
  frame.set_request_id(7);
  frame.mutable_publish()->add_messages()->set_topic("a.b");
  bool own = false;
  ASSERT_TRUE(grpc::SerializationTraits<tinybroker::v1::ClientFrame>::Serialize(
                  frame, stream.reading, &own)
                  .ok());
  bridge.on_read_done(true);
  {
    std::lock_guard<std::mutex> guard{stream.mutex};
    EXPECT_EQ(stream.calls, (std::vector<std::string>{"read", "write", "read"}))
        << (ran_on.load() == std::this_thread::get_id()
                ? "the stand-in actor ran on the reading thread"
                : "a worker, not the reading thread, took the actor's job");
  }
  caf::anon_send_exit(writer, caf::exit_reason::user_shutdown);
}

} // namespace
} // namespace tb
