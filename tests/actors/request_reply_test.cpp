// Tests of request/reply (docs/semantics.md, "Request and reply"): routing
// to fan-out subscribers and back to the caller alone, first reply wins,
// NO_RESPONDERS at once, timeouts on simulated time, the caller's session
// ending, replies only to requests received, group requests acked by their
// reply, and the bounds.

#include <string>
#include <vector>

#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

/// Builds a Request frame for `topic` (to `group` if not empty).
client_frame_ptr request_frame(uint64_t request_id, std::string topic,
                               std::string payload, uint32_t timeout_ms = 1000,
                               std::string group = {}) {
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(request_id);
  auto* req = frame->mutable_request();
  *req->mutable_message() = make_message(std::move(topic), std::move(payload));
  req->set_timeout_ms(timeout_ms);
  req->set_group(std::move(group));
  return frame;
}

/// Builds a Reply frame answering `handle` with `payload`.
client_frame_ptr reply_frame(uint64_t request_id, uint64_t handle,
                             std::string payload) {
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(request_id);
  frame->mutable_reply()->set_reply_handle(handle);
  frame->mutable_reply()->set_payload(std::move(payload));
  return frame;
}

/// A caller and two responders.
class RequestReply : public group_test {
protected:
  /// Sends a request from `s` and runs.
  void request(const test_session& s, uint64_t request_id,
               const std::string& topic, const std::string& payload,
               uint32_t timeout_ms = 1000, const std::string& group = {}) {
    send_frame(s, request_frame(request_id, topic, payload, timeout_ms, group));
    run();
  }

  /// Replies from `s` to the request with `handle`, and runs.
  void reply(const test_session& s, uint64_t handle,
             const std::string& payload) {
    send_frame(s, reply_frame(next_request_id(), handle, payload));
    run();
  }

  /// Returns the handle of the last delivery `s` received (0 if none).
  static uint64_t last_handle(const test_session& s) {
    auto all = s.sink->deliveries();
    return all.empty() ? 0 : all.back().reply_handle();
  }

  /// Returns the errors `s` received.
  static std::vector<pb::ErrorFrame> errors(const test_session& s) {
    std::vector<pb::ErrorFrame> result;
    for (auto& frame : s.sink->of_kind(kind::kError))
      result.push_back(frame.error());
    return result;
  }

  /// Returns the responses `s` received.
  static std::vector<pb::Response> responses(const test_session& s) {
    std::vector<pb::Response> result;
    for (auto& frame : s.sink->of_kind(kind::kResponse))
      result.push_back(frame.response());
    return result;
  }

  test_session caller = spawn_session();
  test_session b = spawn_session();
  test_session c = spawn_session();
};

TEST_F(RequestReply, RequestReachesSubscribersAndTheReplyOnlyTheCaller) {
  subscribe(b, 1, "svc.echo");
  subscribe(c, 7, ">"); // sees the request, as a fan-out subscriber would
  request(caller, 42, "svc.echo", "ping");
  auto got = b.sink->deliveries();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload(), "ping");
  EXPECT_NE(got[0].reply_handle(), 0u);
  EXPECT_GT(got[0].reply_deadline_unix_nanos(), 0);
  reply(b, got[0].reply_handle(), "pong");
  auto res = responses(caller);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].request_id(), 42u);
  EXPECT_EQ(res[0].payload(), "pong");
  EXPECT_EQ(res[0].message_id(), got[0].message_id());
  // The reply has no topic: the ">" subscriber saw the request only.
  EXPECT_EQ(c.sink->payloads(), std::vector<std::string>{"ping"});
  EXPECT_TRUE(responses(b).empty());
  EXPECT_TRUE(responses(c).empty());
  EXPECT_EQ(stats(caller).requests.requests, 1u);
  EXPECT_EQ(stats(caller).requests.replies, 1u);
  EXPECT_EQ(stats(caller).requests.pending, 0u);
}

// As plain deliveries: a request that reaches a subscription before its
// Subscribed frame is queued (the topic added it, the router's answer is
// still on its way) waits behind that frame.
TEST_F(RequestReply, RequestWaitsForTheSubscribedFrameOfItsSubscription) {
  request(caller, 1, "svc.early", "warm"); // caches the route: nobody yet
  ASSERT_EQ(errors(caller).size(), 1u);
  send_frame(b, subscribe_frame(next_request_id(), 1, "svc.early"));
  run_one(b.hdl);     // asks the router
  run_one(router);    // the router asks the topic's shard
  run_except(router); // the shard adds b, pushes the route to the caller
  send_frame(caller, request_frame(2, "svc.early", "ping"));
  run_except(router); // the request reaches b before its confirmation
  EXPECT_TRUE(b.sink->of_kind(kind::kSubscribed).empty());
  EXPECT_TRUE(b.sink->deliveries().empty()) << "written before Subscribed";
  EXPECT_EQ(deref<tb::session_state>(b.hdl).requests.outbox.size(), 1u);
  run(); // the router confirms
  ASSERT_EQ(b.sink->frames.size(), 2u);
  EXPECT_TRUE(b.sink->frames[0].has_subscribed());
  ASSERT_EQ(b.sink->deliveries().size(), 1u);
  EXPECT_EQ(b.sink->deliveries()[0].payload(), "ping");
  reply(b, last_handle(b), "pong");
  auto res = responses(caller);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].payload(), "pong");
}

// A held request whose subscription ends before its confirmation is gone,
// as a fan-out message is; nothing else is held up by it.
TEST_F(RequestReply, HeldRequestOfAnEndedSubscriptionIsDropped) {
  request(caller, 1, "svc.early", "warm");
  send_frame(b, subscribe_frame(next_request_id(), 1, "svc.early"));
  run_one(b.hdl);
  run_one(router);
  run_except(router);
  send_frame(caller, request_frame(2, "svc.early", "ping", 300));
  run_except(router);
  send_frame(b, unsubscribe_frame(next_request_id(), 1));
  run();
  EXPECT_TRUE(b.sink->deliveries().empty());
  EXPECT_EQ(stats(b).buffered, 0u);
  advance(300ms);
  auto errs = errors(caller);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[1].error().reason(), "request_timeout");
}

TEST_F(RequestReply, FirstReplyWinsAndOthersAreCountedLate) {
  subscribe(b, 1, "svc.echo");
  subscribe(c, 1, "svc.echo");
  request(caller, 1, "svc.echo", "ping");
  reply(c, last_handle(c), "from c");
  reply(b, last_handle(b), "from b");
  auto res = responses(caller);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].payload(), "from c");
  EXPECT_EQ(stats(b).requests.late_replies, 1u);
  EXPECT_EQ(stats(c).requests.late_replies, 0u);
  EXPECT_TRUE(errors(b).empty()); // late is not wrong: no error frame
}

TEST_F(RequestReply, NoSubscriberIsNoRespondersAtOnce) {
  request(caller, 5, "svc.nobody", "ping");
  auto errs = errors(caller);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].request_id(), 5u);
  EXPECT_EQ(errs[0].request(), "request");
  EXPECT_EQ(errs[0].error().code(), 14); // UNAVAILABLE
  EXPECT_EQ(errs[0].error().reason(), "no_responders");
  EXPECT_NE(errs[0].error().message().find("svc.nobody"), std::string::npos);
  EXPECT_EQ(stats(caller).requests.no_responders, 1u);
  EXPECT_EQ(stats(caller).requests.pending, 0u);
}

TEST_F(RequestReply, NoReplyWithinTheTimeoutIsDeadlineExceeded) {
  subscribe(b, 1, "svc.slow");
  request(caller, 9, "svc.slow", "ping", 500);
  advance(499ms);
  EXPECT_TRUE(errors(caller).empty());
  advance(1ms);
  auto errs = errors(caller);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].request_id(), 9u);
  EXPECT_EQ(errs[0].error().code(), 4); // DEADLINE_EXCEEDED
  EXPECT_EQ(errs[0].error().reason(), "request_timeout");
  EXPECT_EQ(stats(caller).requests.timeouts, 1u);
  // A reply after the timeout is counted, not delivered.
  reply(b, last_handle(b), "too late");
  EXPECT_TRUE(responses(caller).empty());
  EXPECT_EQ(stats(b).requests.late_replies, 1u);
}

TEST_F(RequestReply, RepliesAfterTheCallerEndedAreCountedNotDelivered) {
  subscribe(b, 1, "svc.echo");
  request(caller, 1, "svc.echo", "ping");
  self->send_exit(caller.hdl, caf::exit_reason::user_shutdown);
  run();
  ASSERT_TRUE(terminated(caller.hdl));
  reply(b, last_handle(b), "pong");
  EXPECT_EQ(stats(b).requests.late_replies, 1u);
  EXPECT_TRUE(errors(b).empty());
}

TEST_F(RequestReply, ASessionMayAnswerOnlyRequestsItReceived) {
  subscribe(b, 1, "svc.echo");
  request(caller, 1, "svc.echo", "ping");
  auto handle = last_handle(b);
  reply(c, handle, "forged"); // c never received it
  auto errs = errors(c);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].request(), "reply");
  EXPECT_EQ(errs[0].error().code(), 5); // NOT_FOUND
  EXPECT_EQ(errs[0].error().reason(), "unknown_request");
  EXPECT_TRUE(responses(caller).empty());
  reply(b, handle, "pong");
  reply(b, handle, "again"); // answered already
  EXPECT_EQ(responses(caller).size(), 1u);
  EXPECT_EQ(errors(b).size(), 1u);
}

TEST_F(RequestReply, GroupRequestIsOneDeliveryAckedByTheReply) {
  create_group("svc", group_settings("svc.>"));
  join(b, 1, "svc", "svc.>");
  join(c, 1, "svc", "svc.>");
  request(caller, 3, "svc.add", "1+2", 1000, "svc");
  auto got_b = b.sink->deliveries();
  auto got_c = c.sink->deliveries();
  ASSERT_EQ(got_b.size() + got_c.size(), 1u);
  auto& member = got_b.empty() ? c : b;
  auto d = member.sink->deliveries()[0];
  EXPECT_NE(d.delivery_id(), 0u);
  EXPECT_EQ(d.reply_handle(), d.delivery_id());
  EXPECT_EQ(counters("svc").in_flight, 1u);
  reply(member, d.reply_handle(), "3");
  auto res = responses(caller);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].payload(), "3");
  EXPECT_EQ(counters("svc").acked, 1u);
  EXPECT_EQ(counters("svc").in_flight, 0u);
}

TEST_F(RequestReply, GroupRequestIsRedeliveredWithItsHandle) {
  create_group("svc", group_settings("svc.>"));
  join(b, 1, "svc", "svc.>");
  request(caller, 3, "svc.add", "1+2", 5000, "svc");
  ASSERT_EQ(b.sink->deliveries().size(), 1u);
  advance(ack_wait + 100ms); // unanswered: redelivered
  auto got = b.sink->deliveries();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].attempt(), 2u);
  EXPECT_EQ(got[1].reply_handle(), got[1].delivery_id());
  reply(b, got[1].reply_handle(), "3");
  ASSERT_EQ(responses(caller).size(), 1u);
  EXPECT_EQ(counters("svc").acked, 1u);
}

TEST_F(RequestReply, GroupWithoutMembersOrUnknownIsNoResponders) {
  create_group("svc", group_settings("svc.>"));
  request(caller, 1, "svc.add", "x", 1000, "svc");
  request(caller, 2, "svc.add", "x", 1000, "nosuch");
  auto errs = errors(caller);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0].error().reason(), "no_responders");
  EXPECT_EQ(errs[1].error().reason(), "no_responders");
  EXPECT_EQ(counters("svc").received, 0u); // not held
  // A group whose pattern does not match the topic is a caller's mistake.
  join(b, 1, "svc", "svc.>");
  request(caller, 3, "other.topic", "x", 1000, "svc");
  errs = errors(caller);
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_EQ(errs[2].error().code(), 3); // INVALID_ARGUMENT
}

TEST_F(RequestReply, PendingRequestsAreCappedPerSession) {
  auto ctx = context();
  ctx.limits.max_pending_requests_per_session = 2;
  auto capped = spawn_session(ctx);
  subscribe(b, 1, "svc.slow");
  request(capped, 1, "svc.slow", "a");
  request(capped, 2, "svc.slow", "b");
  request(capped, 3, "svc.slow", "c");
  auto errs = errors(capped);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].request_id(), 3u);
  EXPECT_EQ(errs[0].error().code(), 8); // RESOURCE_EXHAUSTED
  EXPECT_NE(errs[0].error().message().find("max_pending_requests_per_session"),
            std::string::npos);
  EXPECT_EQ(b.sink->deliveries().size(), 2u);
  EXPECT_EQ(stats(capped).requests.pending, 2u);
}

TEST_F(RequestReply, RepliesAreBoundedLikeMessages) {
  auto ctx = context();
  ctx.limits.max_message_bytes = 8;
  auto small = spawn_session(ctx);
  subscribe(small, 1, "svc.echo");
  request(caller, 1, "svc.echo", "ping");
  reply(small, last_handle(small), "123456789");
  auto errs = errors(small);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].error().reason(), "message_too_large");
  EXPECT_TRUE(responses(caller).empty());
  reply(small, last_handle(small), "12345678"); // still open
  EXPECT_EQ(responses(caller).size(), 1u);
}

TEST_F(RequestReply, BadRequestsAreRefusedWithTheirReason) {
  subscribe(b, 1, "svc.echo");
  request(caller, 1, "svc.*", "x");                      // a pattern
  request(caller, 2, "svc.echo", "x", 600'001);          // too long
  request(caller, 3, "$sys.echo", "x");                  // broker's own
  request(caller, 4, "svc.echo", "x", 1000, "bad name"); // group name
  auto errs = errors(caller);
  ASSERT_EQ(errs.size(), 4u);
  EXPECT_EQ(errs[0].error().reason(), "invalid_topic");
  EXPECT_EQ(errs[1].error().reason(), "invalid_request");
  EXPECT_EQ(errs[2].error().reason(), "reserved_topic");
  EXPECT_EQ(errs[3].error().reason(), "invalid_group_name");
  EXPECT_TRUE(b.sink->deliveries().empty());
}

TEST_F(RequestReply, ARequestNeedsPublishRightsOnItsTopic) {
  tb::access_grant grant;
  grant.enforced = true;
  grant.token = "reader";
  grant.subscribe = {">"};
  auto reader = spawn_session(context(), "peer", grant);
  subscribe(b, 1, "svc.echo");
  request(reader, 1, "svc.echo", "x");
  auto errs = errors(reader);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].error().reason(), "permission_denied");
  EXPECT_TRUE(b.sink->deliveries().empty());
}

} // namespace
} // namespace tb::test
