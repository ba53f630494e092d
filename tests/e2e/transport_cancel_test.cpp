// End to end: a Session stream cancelled right after a publish frame, on
// both transports (issue 31). The session routes and confirms what it read
// before it ends, so that the ids it checked for duplicates are the ids of
// routed messages: the client's resend of the same frame, confirmed as
// duplicates or not, leaves every message delivered exactly once. On the
// completion-queue transport the session used to be stopped as soon as the
// call ended, with a frame still waiting for its de-duplication answer:
// its ids were marked as seen and its messages never routed, so the resend
// was confirmed as duplicates of messages nobody got (256 lost: one frame).

#include <csignal>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "broker_process.hpp"
#include "raw_client.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;

// Rounds of publish-then-cancel, and messages per frame (the client
// library's max_batch_messages).
constexpr int cancel_rounds = 60;
constexpr int cancel_batch = 256;

// The frame of round `round`: `cancel_batch` messages to 7 topics, each
// with its payload as its msg_id.
pb::ClientFrame cancel_test_frame(int round) {
  pb::ClientFrame frame;
  frame.set_request_id(static_cast<uint64_t>(round) + 1);
  auto* publish = frame.mutable_publish();
  publish->set_confirm(true);
  for (int i = 0; i < cancel_batch; ++i) {
    auto* msg = publish->add_messages();
    auto name = std::to_string(round) + "-" + std::to_string(i);
    msg->set_topic("cancel." + std::to_string(i % 7));
    msg->set_payload(name);
    msg->set_msg_id(name);
  }
  return frame;
}

class TransportCancelTest : public ::testing::TestWithParam<std::string> {
protected:
  void TearDown() override {
    if (broker_)
      broker_->stop(SIGTERM);
  }

  std::unique_ptr<broker_process> broker_;
};

TEST_P(TransportCancelTest, PublishesReadBeforeACancelAreRoutedOnce) {
  broker_ = std::make_unique<broker_process>(
      std::vector<std::string>{"--grpc-transport", GetParam()});
  ASSERT_TRUE(broker_->wait_ready()) << broker_->output();
  raw_session sub{raw_channel(broker_->address())};
  pb::ClientFrame subscribe;
  subscribe.mutable_subscribe()->set_subscription_id(1);
  subscribe.mutable_subscribe()->set_pattern("cancel.>");
  ASSERT_TRUE(sub.send(subscribe));
  ASSERT_TRUE(sub.read_until(pb::ServerFrame::kSubscribed).has_value());
  // The client's resends, on a stream of their own.
  raw_session resend{raw_channel(broker_->address(), true)};
  int duplicates = 0;
  for (int round = 0; round < cancel_rounds; ++round) {
    auto frame = cancel_test_frame(round);
    {
      // Its own connection: the cancel ends the call while the frame is
      // read or being routed.
      raw_session cancelled{raw_channel(broker_->address(), true)};
      ASSERT_TRUE(cancelled.send(frame));
      // Cancelled at once, or up to 12 ms later: the frame is read, being
      // checked for duplicates, or routed by then.
      if (round % 2 == 1)
        std::this_thread::sleep_for(std::chrono::microseconds(200 * round));
      cancelled.cancel();
      cancelled.finish();
    }
    ASSERT_TRUE(resend.send(frame));
    auto confirm = resend.read_until(pb::ServerFrame::kPublishConfirm);
    ASSERT_TRUE(confirm.has_value()) << "round " << round;
    for (auto& outcome : confirm->publish_confirm().results())
      duplicates += outcome.duplicate();
  }
  // Everything confirmed is routed: a last message marks the end.
  pb::ClientFrame end;
  auto* msg = end.mutable_publish()->add_messages();
  msg->set_topic("cancel.end");
  msg->set_payload("end");
  ASSERT_TRUE(resend.send(end));
  std::map<std::string, int> seen;
  bool ended = false;
  while (!ended) {
    auto frame = sub.read_until(pb::ServerFrame::kDeliveries);
    ASSERT_TRUE(frame.has_value()) << "the subscriber's stream ended";
    for (auto& delivery : frame->deliveries().deliveries()) {
      if (delivery.payload() == "end")
        ended = true;
      else
        ++seen[delivery.payload()];
    }
  }
  int lost = 0;
  int doubled = 0;
  for (int round = 0; round < cancel_rounds; ++round)
    for (int i = 0; i < cancel_batch; ++i) {
      auto n = seen[std::to_string(round) + "-" + std::to_string(i)];
      lost += n == 0;
      doubled += n > 1;
    }
  EXPECT_EQ(lost, 0) << "confirmed (" << duplicates
                     << " as duplicates) but never delivered";
  EXPECT_EQ(doubled, 0);
  std::cout << "rounds: " << cancel_rounds
            << ", confirmed as duplicates: " << duplicates << ", lost: " << lost
            << "\n";
  EXPECT_TRUE(resend.close().ok());
  EXPECT_TRUE(sub.close().ok());
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportCancelTest,
                         ::testing::Values("cq", "callback"),
                         [](const auto& info) { return info.param; });

} // namespace
} // namespace tb::test
