// End to end: input the broker must survive (issue 10, section 3; issue 15
// for strings that are not UTF-8). Frames that do not parse end their
// stream with INVALID_ARGUMENT naming why, and a unary Publish that does not
// parse is answered so, each with a warning in the log; an
// empty frame, a flood of stale acks and oversized batches get errors and
// leave the session usable; nothing of a refused batch is routed.

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "e2e_fixture.hpp"
#include "raw_client.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;

using clock_type = std::chrono::steady_clock;

// Prints how long a test's main part took, so that it can be quoted.
void report_duration(const char* what, clock_type::time_point start) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                clock_type::now() - start)
                .count();
  std::printf("[ TIME ] %s: %lld ms\n", what, static_cast<long long>(ms));
}

// Returns `bytes` with the last byte of `marker` (which must occur in them)
// replaced by 0xff, a byte that is never UTF-8: protobuf will not serialize
// such a string without complaint, so tests build it from a good one.
std::string spoil_utf8(std::string bytes, const std::string& marker) {
  auto at = bytes.find(marker);
  EXPECT_NE(at, std::string::npos) << marker;
  if (at != std::string::npos)
    bytes[at + marker.size() - 1] = '\xff';
  return bytes;
}

class BadInputTest : public BrokerTest {
protected:
  // Returns the broker's first log line holding `text` ("" if none).
  std::string log_line(const std::string& text) const {
    auto out = broker_->output();
    auto at = out.find(text);
    if (at == std::string::npos)
      return "";
    auto begin = out.rfind('\n', at) + 1; // npos + 1 == 0
    return out.substr(begin, out.find('\n', at) - begin);
  }

  // Subscribes a raw session to `pattern` and waits for the confirmation.
  static void raw_subscribe(raw_session& session, uint64_t id,
                            const std::string& pattern) {
    pb::ClientFrame frame;
    frame.mutable_subscribe()->set_subscription_id(id);
    frame.mutable_subscribe()->set_pattern(pattern);
    ASSERT_TRUE(session.send(frame));
    auto got = session.read_until(pb::ServerFrame::kSubscribed);
    ASSERT_TRUE(got.has_value()) << "no Subscribed frame for " << pattern;
  }

  // Sends `bytes` on a session that works, and expects the broker to end
  // it with INVALID_ARGUMENT naming the problem, to log it at warn, and to
  // go on serving other sessions.
  void expect_malformed(const std::string& bytes, const std::string& why) {
    auto sub = subscriber(1, "after.malformed");
    raw_session session{raw_channel(broker_->address())};
    raw_subscribe(session, 7, "malformed.>");
    ASSERT_TRUE(session.send_bytes(bytes));
    auto status = session.finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << status.error_message();
    auto size = std::to_string(bytes.size()) + " bytes";
    EXPECT_NE(status.error_message().find(size), std::string::npos)
        << status.error_message();
    EXPECT_NE(status.error_message().find("tinybroker.v1.ClientFrame"),
              std::string::npos)
        << status.error_message();
    EXPECT_NE(status.error_message().find(why), std::string::npos)
        << status.error_message();
    EXPECT_TRUE(broker_->wait_for_output("malformed client frame", patience))
        << broker_->output();
    auto line = log_line("malformed client frame");
    EXPECT_NE(line.find("WARN"), std::string::npos) << line;
    EXPECT_NE(line.find(size), std::string::npos) << line;
    publish({"after.malformed"});
    EXPECT_EQ(topics_of(sub->receive(1, patience)),
              std::vector<std::string>({"after.malformed"}));
  }

  // Returns the counters of group `name` as ListGroups shows them.
  pb::GroupCounters counters_of(const std::string& name) {
    grpc::ClientContext ctx;
    pb::ListGroupsReply reply;
    auto status = conn_->stub().ListGroups(&ctx, {}, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    for (auto& group : reply.groups())
      if (group.name() == name)
        return group.counters();
    ADD_FAILURE() << "no group " << name;
    return {};
  }

  // Polls the counters of group `name` until `pred` holds or `patience`
  // passed; returns the last counters read.
  template <class Predicate>
  pb::GroupCounters wait_counters(const std::string& name, Predicate pred) {
    auto deadline = clock_type::now() + patience;
    auto counters = counters_of(name);
    while (!pred(counters) && clock_type::now() < deadline)
      counters = counters_of(name);
    return counters;
  }
};

// -- frames that do not parse -------------------------------------------------

TEST_F(BadInputTest, BytesThatAreNotProtobufEndTheStreamWithInvalidArgument) {
  // 0xff... is a tag with an unfinished varint.
  expect_malformed(std::string(12, '\xff'), "not protobuf wire format");
}

TEST_F(BadInputTest, TruncatedFrameEndsTheStreamWithInvalidArgument) {
  pb::ClientFrame frame;
  frame.set_request_id(3);
  frame.mutable_subscribe()->set_subscription_id(2);
  frame.mutable_subscribe()->set_pattern("orders.>");
  auto bytes = frame.SerializeAsString();
  bytes.pop_back(); // the pattern's last byte
  expect_malformed(bytes, "not protobuf wire format");
}

TEST_F(BadInputTest, StringThatIsNotUtf8EndsTheStreamWithInvalidArgument) {
  // subscribe (field 2) { pattern (field 2) = "\xc3\x28" }: not UTF-8.
  expect_malformed(std::string{"\x12\x04\x12\x02\xc3\x28", 6}, "UTF-8");
}

// Issue 15: a topic that is not UTF-8 in a publish frame, as an older C++
// client sent it (the client now refuses it before sending).
TEST_F(BadInputTest, TopicThatIsNotUtf8EndsTheStreamWithInvalidArgument) {
  pb::ClientFrame frame;
  frame.set_request_id(4);
  frame.mutable_publish()->set_confirm(true);
  frame.mutable_publish()->add_messages()->set_topic("malformed.topic~");
  expect_malformed(spoil_utf8(frame.SerializeAsString(), "malformed.topic~"),
                   "a string that is not UTF-8");
}

// Issue 15: the unary call answers INVALID_ARGUMENT naming why (not
// UNIMPLEMENTED), logs a warning, and routes none of the request.
TEST_F(BadInputTest, UnaryPublishWithATopicThatIsNotUtf8IsInvalidArgument) {
  auto sub = subscriber(1, ">");
  pb::PublishRequest request;
  request.add_messages()->set_topic("good.topic");
  request.add_messages()->set_topic("bad.topic~");
  auto bytes = spoil_utf8(request.SerializeAsString(), "bad.topic~");
  auto status = raw_publish(raw_channel(broker_->address()), bytes);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << status.error_message();
  auto size = std::to_string(bytes.size()) + " bytes";
  for (auto& part : {size, std::string{"tinybroker.v1.PublishRequest"},
                     std::string{"a string that is not UTF-8"}})
    EXPECT_NE(status.error_message().find(part), std::string::npos)
        << part << " not in: " << status.error_message();
  ASSERT_TRUE(broker_->wait_for_output("malformed Publish request", patience))
      << broker_->output();
  auto line = log_line("malformed Publish request");
  EXPECT_NE(line.find("WARN"), std::string::npos) << line;
  EXPECT_NE(line.find("peer="), std::string::npos) << line;
  EXPECT_NE(line.find(size), std::string::npos) << line;
  // Nothing of the request was routed: the next message is the first.
  publish({"after.bad"});
  EXPECT_EQ(topics_of(sub->receive(1, patience)),
            std::vector<std::string>({"after.bad"}));
}

TEST_F(BadInputTest, ZeroByteFrameGetsAnErrorFrameAndTheStreamGoesOn) {
  raw_session session{raw_channel(broker_->address())};
  ASSERT_TRUE(session.send_bytes(""));
  auto frame = session.read_until(pb::ServerFrame::kError);
  ASSERT_TRUE(frame.has_value()) << "the stream ended instead";
  EXPECT_EQ(frame->error().request(), "unknown");
  EXPECT_EQ(frame->error().error().code(), 3); // INVALID_ARGUMENT
  EXPECT_EQ(frame->error().error().reason(), "invalid_request");
  raw_subscribe(session, 1, "still.open");
  publish({"still.open"});
  auto delivered = session.read_until(pb::ServerFrame::kDeliveries);
  ASSERT_TRUE(delivered.has_value());
  EXPECT_EQ(delivered->deliveries().deliveries(0).topic(), "still.open");
  EXPECT_TRUE(session.close().ok());
}

TEST_F(BadInputTest, UndecodableUnaryPublishIsInvalidArgument) {
  auto sub = subscriber(1, ">");
  auto channel = raw_channel(broker_->address());
  auto status = raw_publish(channel, std::string(9, '\xff'));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << status.error_message();
  EXPECT_NE(status.error_message().find("tinybroker.v1.PublishRequest"),
            std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find("9 bytes"), std::string::npos);
  // The raw method still takes a well-formed request, and routes only it.
  pb::PublishRequest request;
  request.add_messages()->set_topic("well.formed");
  std::string reply_bytes;
  ASSERT_TRUE(
      raw_publish(channel, request.SerializeAsString(), &reply_bytes).ok());
  pb::PublishReply reply;
  ASSERT_TRUE(reply.ParseFromString(reply_bytes));
  ASSERT_EQ(reply.results_size(), 1);
  EXPECT_GT(reply.results(0).id(), 0u);
  EXPECT_EQ(topics_of(sub->receive(1, patience)),
            std::vector<std::string>({"well.formed"}));
}

// -- stale acks ---------------------------------------------------------------

TEST_F(BadInputTest, FloodOfAcksForUnknownIdsIsIgnoredAndCounted) {
  constexpr uint64_t frames = 100;
  constexpr uint64_t ids_per_frame = 1000;
  auto member = conn_->open_session();
  ASSERT_TRUE(member->join(1, "flood", "flood.>"));
  ASSERT_TRUE(member->wait_for(pb::ServerFrame::kSubscribed, patience));
  publish({"flood.held"});
  auto held = member->receive(1, patience);
  ASSERT_EQ(held.size(), 1u);
  auto rss_before = rss_kib(broker_->pid());
  auto start = clock_type::now();
  // Ids far from any the broker gave, and never the held one.
  uint64_t next_id = uint64_t{1} << 40;
  for (uint64_t f = 0; f < frames; ++f) {
    std::vector<uint64_t> ids(ids_per_frame);
    for (auto& id : ids)
      id = next_id++;
    ASSERT_TRUE(member->ack(ids));
  }
  auto counters = wait_counters("flood", [](const pb::GroupCounters& c) {
    return c.stale_answers() >= frames * ids_per_frame;
  });
  report_duration("100,000 stale acks counted", start);
  auto rss_after = rss_kib(broker_->pid());
  std::printf("[ RSS  ] ack flood: broker %s before, %s after\n",
              mib(rss_before).c_str(), mib(rss_after).c_str());
  EXPECT_EQ(counters.stale_answers(), frames * ids_per_frame);
  // None of them answered the held delivery.
  EXPECT_EQ(counters.acked(), 0u);
  EXPECT_EQ(counters.in_flight(), 1u);
  // 100,000 ids are 800 KB on the wire: the broker keeps none of them.
  if (rss_is_meaningful) {
    EXPECT_LT(rss_after, rss_before + 32 * 1024);
  }
  // The session still answers its own delivery and receives.
  ASSERT_TRUE(member->ack({held[0].delivery_id()}));
  counters = wait_counters(
      "flood", [](const pb::GroupCounters& c) { return c.acked() == 1; });
  EXPECT_EQ(counters.acked(), 1u);
  EXPECT_EQ(counters.in_flight(), 0u);
  publish({"flood.next"});
  EXPECT_EQ(topics_of(member->receive(1, patience)),
            std::vector<std::string>({"flood.next"}));
}

// -- huge batches -------------------------------------------------------------

TEST_F(BadInputTest, BatchBeyondMaxPublishBatchRoutesNothing) {
  constexpr size_t over = 4097; // max_publish_batch is 4096
  auto sub = subscriber(1, "huge.>");
  auto session = conn_->open_session();
  std::vector<client::outgoing_message> batch(over,
                                              {"huge.batch", "x", {}, {}});
  ASSERT_TRUE(session->publish(batch, true, 41));
  auto frame = session->wait_for(pb::ServerFrame::kError, patience);
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->error().request_id(), 41u);
  EXPECT_EQ(frame->error().request(), "publish");
  EXPECT_EQ(frame->error().error().code(), 8); // RESOURCE_EXHAUSTED
  auto& text = frame->error().error().message();
  EXPECT_NE(text.find("4097"), std::string::npos) << text;
  EXPECT_NE(text.find("4096"), std::string::npos) << text;
  auto status = conn_->publish(batch);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Nothing of either batch was routed: the next message is the first.
  ASSERT_TRUE(session->publish({{"huge.marker", "m", {}, {}}}, true, 42));
  ASSERT_TRUE(session->wait_for(pb::ServerFrame::kPublishConfirm, patience));
  auto got = sub->receive(1, patience);
  EXPECT_EQ(topics_of(got), std::vector<std::string>({"huge.marker"}));
}

// Returns a publish frame of `count` messages to `topic` of `payload` bytes.
pb::ClientFrame big_publish(int count, std::size_t payload,
                            const std::string& topic) {
  pb::ClientFrame frame;
  frame.set_request_id(5);
  frame.mutable_publish()->set_confirm(true);
  for (int i = 0; i < count; ++i) {
    auto* msg = frame.mutable_publish()->add_messages();
    msg->set_topic(topic);
    msg->set_payload(std::string(payload, 'g'));
  }
  return frame;
}

TEST_F(BadInputTest, FrameBeyondTheFrameLimitIsRefusedAndRoutesNothing) {
  // With the default limits the broker takes frames of up to 72 MiB
  // (net/grpc_settings.hpp: 64 MiB of messages plus 8 MiB of headroom);
  // this publish frame holds 73 messages of 1 MiB - 64 bytes each (each
  // within max_message_bytes), just over.
  constexpr std::size_t limit = (64 + 8) << 20;
  auto sub = subscriber(1, "giant.>");
  auto frame = big_publish(73, (1 << 20) - 64, "giant.batch");
  auto bytes = frame.SerializeAsString();
  ASSERT_GT(bytes.size(), limit);
  auto start = clock_type::now();
  auto channel = raw_channel(broker_->address());
  raw_session session{channel};
  session.send_bytes(bytes); // may fail once the broker refused it
  auto status = session.finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
  auto named = "the frame has " + std::to_string(bytes.size()) +
               " bytes; the broker reads frames of up to " +
               std::to_string(limit) + " bytes";
  EXPECT_NE(status.error_message().find(named), std::string::npos)
      << status.error_message();
  std::printf("[ STATUS ] a 73 MiB frame: %s\n",
              status.error_message().c_str());
  // Issue 26: logged as what it is, not as the client's close.
  ASSERT_TRUE(
      broker_->wait_for_output("client frame over the frame limit", patience))
      << broker_->output();
  auto line = log_line("client frame over the frame limit");
  EXPECT_NE(line.find("WARN"), std::string::npos) << line;
  EXPECT_NE(line.find("limit_bytes=" + std::to_string(limit)),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("RESOURCE_EXHAUSTED"), std::string::npos) << line;
  ASSERT_TRUE(broker_->wait_for_output("ended=frame_too_large", patience))
      << broker_->output();
  // The same as a unary call.
  pb::PublishRequest request;
  *request.mutable_messages() = frame.publish().messages();
  frame.Clear();
  auto unary = raw_publish(channel, request.SerializeAsString());
  EXPECT_EQ(unary.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << unary.error_message();
  EXPECT_NE(unary.error_message().find("reads requests of up to " +
                                       std::to_string(limit) + " bytes"),
            std::string::npos)
      << unary.error_message();
  report_duration("two frames over the limit refused", start);
  // Nothing was routed, and the broker serves on.
  publish({"giant.marker"});
  EXPECT_EQ(topics_of(sub->receive(1, patience)),
            std::vector<std::string>({"giant.marker"}));
}

// Issue 26: a 70 MiB message fits the frame limit, so the broker reads it
// and refuses it as too large (over max_message_bytes) with the stream
// going on, where gRPC's 64 MiB limit used to tear the stream down.
TEST_F(BadInputTest, A70MiBMessageIsRefusedAndTheStreamGoesOn) {
  auto sub = subscriber(1, "seventy.>");
  raw_session session{raw_channel(broker_->address())};
  raw_subscribe(session, 7, "seventy.>");
  ASSERT_TRUE(session.send(big_publish(1, 70 << 20, "seventy.big")));
  auto confirm = session.read_until(pb::ServerFrame::kPublishConfirm);
  ASSERT_TRUE(confirm.has_value()) << broker_->output();
  ASSERT_EQ(confirm->publish_confirm().results_size(), 1);
  auto& error = confirm->publish_confirm().results(0).error();
  EXPECT_EQ(error.reason(), "message_too_large");
  EXPECT_NE(error.message().find("the limit is 1048576"), std::string::npos)
      << error.message();
  ASSERT_TRUE(session.send(big_publish(1, 3, "seventy.after")));
  auto routed = session.read_until(pb::ServerFrame::kDeliveries);
  ASSERT_TRUE(routed.has_value()) << "the stream goes on";
  EXPECT_EQ(routed->deliveries().deliveries(0).topic(), "seventy.after");
  EXPECT_EQ(topics_of(sub->receive(1, patience)),
            std::vector<std::string>({"seventy.after"}));
}

} // namespace
} // namespace tb::test
