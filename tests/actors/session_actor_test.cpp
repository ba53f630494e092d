// Tests of a session actor: bad requests answered by error frames while the
// session goes on, backpressure towards a slow client, and half-close.

#include <string>
#include <vector>

#include "tests/actors/actor_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;
using strings = std::vector<std::string>;

/// Answers a session writes before it stops reading (max_control_frames in
/// actors/session/session_actor.cpp).
constexpr size_t max_control_frames = 256;

/// A session under test, plus a publisher for fan-out traffic.
class SessionActor : public actor_test {
protected:
  /// Returns the frames `session` wrote after the first `mark`.
  static std::vector<pb::ServerFrame> frames_since(const test_session& session,
                                                   size_t mark) {
    auto& frames = session.sink->frames;
    return {frames.begin() + static_cast<std::ptrdiff_t>(mark), frames.end()};
  }

  /// Returns the last error frame `session` wrote (failing if there is none).
  static pb::ErrorFrame last_error(const test_session& session) {
    auto errors = session.sink->of_kind(kind::kError);
    EXPECT_FALSE(errors.empty()) << "no error frame";
    return errors.empty() ? pb::ErrorFrame{} : errors.back().error();
  }

  /// Checks an error frame's request, ids and code.
  static void expect_error(const pb::ErrorFrame& error, uint64_t request_id,
                           const std::string& request, int code,
                           const std::string& reason) {
    EXPECT_EQ(error.request_id(), request_id);
    EXPECT_EQ(error.request(), request);
    EXPECT_EQ(error.error().code(), code);
    EXPECT_EQ(error.error().reason(), reason);
    EXPECT_FALSE(error.error().message().empty());
  }

  /// Checks that `session` still works: subscription `id` is confirmed and
  /// a message it publishes to itself comes back.
  void expect_session_works(const test_session& session, uint64_t id) {
    auto topic = "works." + std::to_string(id);
    auto mark = session.sink->frames.size();
    subscribe(session, id, topic);
    publish(session, topic, 1, "ok");
    size_t subscribed = 0, delivered = 0, confirmed = 0;
    for (auto& frame : frames_since(session, mark)) {
      if (frame.has_subscribed()) {
        EXPECT_EQ(frame.subscribed().subscription_id(), id);
        ++subscribed;
      } else if (frame.has_deliveries()) {
        ASSERT_EQ(frame.deliveries().deliveries_size(), 1);
        EXPECT_EQ(frame.deliveries().deliveries(0).subscription_id(), id);
        EXPECT_EQ(frame.deliveries().deliveries(0).payload(), "ok0");
        ++delivered;
      } else if (frame.has_publish_confirm()) {
        EXPECT_FALSE(frame.publish_confirm().results(0).has_error());
        ++confirmed;
      } else {
        ADD_FAILURE() << "unexpected frame " << frame.ShortDebugString();
      }
    }
    EXPECT_EQ(subscribed, 1u);
    EXPECT_EQ(delivered, 1u);
    EXPECT_EQ(confirmed, 1u);
  }

  test_session pub = spawn_session();
};

// -- bad requests -------------------------------------------------------------

TEST_F(SessionActor, BadPatternGetsErrorFrameNamingSubscribe) {
  auto s = spawn_session();
  send_frame(s, subscribe_frame(11, 1, "orders..created"));
  run();
  auto error = last_error(s);
  expect_error(error, 11, "subscribe", 3, "invalid_pattern");
  EXPECT_EQ(error.subscription_id(), 1u);
  EXPECT_EQ(s.sink->consumed, 1u);
  expect_session_works(s, 1); // the refused id is free
}

TEST_F(SessionActor, DuplicateSubscriptionIdIsRefused) {
  auto s = spawn_session();
  subscribe(s, 1, "a.b");
  send_frame(s, subscribe_frame(12, 1, "c.d"));
  run();
  auto error = last_error(s);
  expect_error(error, 12, "subscribe", 3, "invalid_request");
  EXPECT_EQ(error.subscription_id(), 1u);
  EXPECT_EQ(s.sink->of_kind(kind::kSubscribed).size(), 1u);
  publish(pub, "c.d");
  EXPECT_TRUE(s.sink->deliveries().empty());
  expect_session_works(s, 2);
}

TEST_F(SessionActor, UnsubscribeOfUnknownIdIsNotFound) {
  auto s = spawn_session();
  send_frame(s, unsubscribe_frame(13, 9));
  run();
  auto error = last_error(s);
  expect_error(error, 13, "unsubscribe", 5, "unknown_subscription");
  EXPECT_EQ(error.subscription_id(), 9u);
  expect_session_works(s, 9);
}

TEST_F(SessionActor, OversizedMessageIsRefusedInTheConfirmOnly) {
  auto ctx = context();
  ctx.limits.max_message_bytes = 16;
  auto s = spawn_session(ctx);
  send_frame(s, publish_frame(14, {make_message("t.a", "small"),
                                   make_message("t.a", std::string(17, 'x')),
                                   make_message("t.a", "small too")}));
  run();
  auto confirms = s.sink->of_kind(kind::kPublishConfirm);
  ASSERT_EQ(confirms.size(), 1u);
  auto& confirm = confirms[0].publish_confirm();
  EXPECT_EQ(confirm.request_id(), 14u);
  ASSERT_EQ(confirm.results_size(), 3);
  EXPECT_NE(confirm.results(0).id(), 0u);
  EXPECT_EQ(confirm.results(1).id(), 0u);
  EXPECT_EQ(confirm.results(1).error().code(), 3);
  EXPECT_EQ(confirm.results(1).error().reason(), "message_too_large");
  EXPECT_GT(confirm.results(2).id(), confirm.results(0).id());
  EXPECT_TRUE(s.sink->of_kind(kind::kError).empty());
  EXPECT_EQ(stats(s).published, 2u);
  expect_session_works(s, 1);
}

TEST_F(SessionActor, BatchOverLimitGetsErrorFrameAndPublishesNothing) {
  auto ctx = context();
  ctx.limits.max_publish_batch = 4;
  auto s = spawn_session(ctx);
  send_frame(s, publish_frame(15, "t.a", 5));
  run();
  expect_error(last_error(s), 15, "publish", 8, "limit_exceeded");
  EXPECT_TRUE(s.sink->of_kind(kind::kPublishConfirm).empty());
  EXPECT_EQ(stats(s).published, 0u);
  EXPECT_EQ(s.sink->consumed, 1u);
  send_frame(s, publish_frame(16, "t.a", 4));
  run();
  auto confirms = s.sink->of_kind(kind::kPublishConfirm);
  ASSERT_EQ(confirms.size(), 1u);
  EXPECT_EQ(confirms[0].publish_confirm().results_size(), 4);
  expect_session_works(s, 1);
}

TEST_F(SessionActor, EmptyFrameGetsErrorFrame) {
  auto s = spawn_session();
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(17);
  send_frame(s, frame);
  run();
  expect_error(last_error(s), 17, "unknown", 3, "invalid_request");
  EXPECT_EQ(s.sink->consumed, 1u);
  expect_session_works(s, 1);
}

// -- backpressure -------------------------------------------------------------

TEST_F(SessionActor, DeliveriesCoalesceWhileTheSinkIsBusy) {
  auto s = spawn_session();
  subscribe(s, 1, "t.a");
  auto mark = s.sink->frames.size();
  s.sink->set_busy();
  for (int i = 0; i < 5; ++i)
    publish(pub, "t.a", 1, "p" + std::to_string(i) + "_");
  EXPECT_EQ(s.sink->frames.size(), mark);
  EXPECT_EQ(stats(s).buffered, 5u);
  s.sink->complete_write();
  run();
  auto frames = frames_since(s, mark);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(s.sink->payloads(),
            (strings{"p0_0", "p1_0", "p2_0", "p3_0", "p4_0"}));
  EXPECT_EQ(stats(s).delivered, 5u);
}

// Issue 15: answers do not wait for the frame being written (no round trip
// to the actor per answer), deliveries still do, and order holds.
TEST_F(SessionActor, AnswersQueueInTheSinkWhileDeliveriesWait) {
  auto s = spawn_session();
  subscribe(s, 1, "t.a");
  auto mark = s.sink->frames.size();
  s.sink->set_busy();
  s.sink->set_queue_room(2);
  publish(pub, "t.a", 2);
  for (uint64_t id = 2; id <= 5; ++id)
    send_frame(s, subscribe_frame(100 + id, id, "t.b"));
  run();
  // Two answers fit in the sink's queue; the deliveries wait for the write.
  auto frames = frames_since(s, mark);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].subscribed().subscription_id(), 2u);
  EXPECT_EQ(frames[1].subscribed().subscription_id(), 3u);
  s.sink->complete_write();
  run();
  frames = frames_since(s, mark);
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames[2].subscribed().subscription_id(), 4u);
  EXPECT_EQ(frames[3].subscribed().subscription_id(), 5u);
  EXPECT_EQ(frames[4].deliveries().deliveries_size(), 2);
}

TEST_F(SessionActor, FullSubscriptionLosesOldestAndSaysSoFirst) {
  auto ctx = context();
  ctx.limits.subscription_buffer = 4;
  auto s = spawn_session(ctx);
  subscribe(s, 1, "t.a");
  auto mark = s.sink->frames.size();
  s.sink->set_busy();
  publish(pub, "t.a", 10);
  s.sink->complete_write();
  run();
  auto frames = frames_since(s, mark);
  ASSERT_EQ(frames.size(), 2u);
  ASSERT_TRUE(frames[0].has_dropped());
  EXPECT_EQ(frames[0].dropped().subscription_id(), 1u);
  EXPECT_EQ(frames[0].dropped().count(), 6u);
  EXPECT_EQ(frames[0].dropped().total(), 6u);
  EXPECT_EQ(s.sink->payloads(), (strings{"m6", "m7", "m8", "m9"}));
  // A second loss reports its own count and the running total.
  s.sink->set_busy();
  publish(pub, "t.a", 6, "n");
  s.sink->complete_write();
  run();
  auto dropped = s.sink->of_kind(kind::kDropped);
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[1].dropped().count(), 2u);
  EXPECT_EQ(dropped[1].dropped().total(), 8u);
  EXPECT_EQ(stats(s).dropped, 8u);
}

TEST_F(SessionActor, LossesWhileTheSinkIsBusyAreReportedInOneFrame) {
  // A client that does not read must not grow the session: one Dropped
  // frame per lossy publish would queue without bound.
  auto ctx = context();
  ctx.limits.subscription_buffer = 4;
  auto s = spawn_session(ctx);
  subscribe(s, 1, "t.a");
  auto mark = s.sink->frames.size();
  s.sink->set_busy();
  for (int i = 0; i < 20; ++i)
    publish(pub, "t.a", 1, "p" + std::to_string(i) + "_");
  EXPECT_LE(deref<tb::session_state>(s.hdl).control.size(), 1u);
  s.sink->complete_write();
  run();
  auto frames = frames_since(s, mark);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].dropped().count(), 16u);
  EXPECT_EQ(frames[0].dropped().total(), 16u);
  EXPECT_EQ(frames[1].deliveries().deliveries_size(), 4);
}

TEST_F(SessionActor, UnsubscribeDiscardsBufferedDeliveriesWithoutEmptyFrame) {
  auto s = spawn_session();
  subscribe(s, 1, "t.a");
  auto mark = s.sink->frames.size();
  s.sink->set_busy();
  publish(pub, "t.a", 3);
  send_frame(s, unsubscribe_frame(18, 1));
  run();
  s.sink->complete_write();
  run();
  auto frames = frames_since(s, mark);
  ASSERT_GE(frames.size(), 1u);
  EXPECT_TRUE(frames[0].has_unsubscribed());
  for (auto& frame : frames) {
    if (frame.has_deliveries()) {
      EXPECT_GT(frame.deliveries().deliveries_size(), 0) << "empty frame";
    }
  }
  EXPECT_EQ(frames.size(), 1u);
}

TEST_F(SessionActor, FrameConsumedOncePerProcessedClientFrame) {
  auto s = spawn_session();
  send_frame(s, subscribe_frame(1, 1, "t.a"));
  send_frame(s, unsubscribe_frame(2, 1));
  send_frame(s, unsubscribe_frame(3, 1)); // refused, but processed
  run();
  EXPECT_EQ(s.sink->consumed, 3u);
  // A publish is released once routed, not when it arrives.
  send_frame(s, publish_frame(4, "t.new", 1));
  sched.prioritize(s.hdl);
  sched.run_once(); // the session asks the router for the route
  EXPECT_EQ(s.sink->consumed, 3u);
  run();
  EXPECT_EQ(s.sink->consumed, 4u);
}

TEST_F(SessionActor, UnwrittenAnswersStopReadingUntilWritten) {
  auto s = spawn_session();
  s.sink->set_busy();
  const size_t frames = max_control_frames + 44;
  for (size_t i = 0; i < frames; ++i)
    send_frame(s, publish_frame(i, "t.a", 1));
  run();
  // Released while fewer than max_control_frames answers wait unwritten.
  EXPECT_EQ(s.sink->consumed, max_control_frames - 1);
  EXPECT_TRUE(s.sink->frames.empty());
  s.sink->complete_write();
  run();
  EXPECT_EQ(s.sink->of_kind(kind::kPublishConfirm).size(), frames);
  EXPECT_EQ(s.sink->consumed, frames);
}

// -- half-close ---------------------------------------------------------------

TEST_F(SessionActor, HalfCloseFinishesOnceFramesAreWritten) {
  auto s = spawn_session();
  s.sink->set_busy();
  send_frame(s, publish_frame(19, "t.a", 1));
  run();
  self->send(s.hdl, tb::closed_atom_v);
  run();
  EXPECT_FALSE(s.sink->finished);
  EXPECT_FALSE(terminated(s.hdl));
  send_frame(s, subscribe_frame(20, 1, "t.a")); // ignored once closing
  run();
  s.sink->complete_write();
  run();
  ASSERT_EQ(s.sink->frames.size(), 1u);
  EXPECT_EQ(s.sink->frames[0].publish_confirm().request_id(), 19u);
  EXPECT_TRUE(s.sink->finished);
  EXPECT_EQ(s.sink->finish_code, ec::none);
  EXPECT_TRUE(terminated(s.hdl));
}

// Found by fuzz_session (tests/fuzz/corpus/session/close_mid_publish): the
// session ended while a group still had to answer the publish, so the
// confirm was lost and the frame never released.
TEST_F(SessionActor, HalfCloseWaitsForPublishesStillRouted) {
  auto worker = spawn_session();
  send_frame(worker, join_frame(next_request_id(), 1, "c.>", "g"));
  run();
  auto s = spawn_session();
  send_frame(s, publish_frame(21, "c.d", 2));
  self->send(s.hdl, tb::closed_atom_v);
  run();
  auto confirms = s.sink->of_kind(kind::kPublishConfirm);
  ASSERT_EQ(confirms.size(), 1u);
  EXPECT_EQ(confirms[0].publish_confirm().request_id(), 21u);
  EXPECT_EQ(confirms[0].publish_confirm().results_size(), 2);
  EXPECT_EQ(s.sink->consumed, 1u);
  EXPECT_TRUE(s.sink->finished);
  EXPECT_EQ(s.sink->finish_code, ec::none);
  EXPECT_TRUE(terminated(s.hdl));
  EXPECT_EQ(worker.sink->deliveries().size(), 2u);
}

TEST_F(SessionActor, HalfCloseWithNothingPendingFinishesAtOnce) {
  auto s = spawn_session();
  self->send(s.hdl, tb::closed_atom_v);
  run();
  EXPECT_TRUE(s.sink->finished);
  EXPECT_EQ(s.sink->finish_code, ec::none);
  EXPECT_TRUE(terminated(s.hdl));
}

} // namespace
} // namespace tb::test
