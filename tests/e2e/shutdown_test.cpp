// End to end, spec 9 (issue 10, section 4): SIGTERM under publish load,
// with a subscriber that stopped reading, exits 0 within shutdown_grace
// (plus a second for the process to go), and every open client stream
// ends with UNAVAILABLE.

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "client_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

// The broker's shutdown_grace in this test.
constexpr auto grace = 2s;

class ShutdownTest : public AsyncClientTest {
protected:
  std::vector<std::string> broker_args() override {
    return {"--config", write_temp_file("shutdown_grace = \"2s\"\n", ".toml")};
  }
};

// Publishes batches of 64 messages of 1 KiB on `session` until `stop`, the
// stream breaks, 20 s pass or 100,000 frames went out; counts the frames.
void publish_load(client::session& session, const std::atomic<bool>& stop,
                  std::atomic<uint64_t>& frames) {
  std::vector<client::outgoing_message> batch(
      64, client::outgoing_message{"load.x", std::string(1024, 'x'), {}, {}});
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!stop.load() && frames.load() < 100000 &&
         std::chrono::steady_clock::now() < deadline) {
    if (!session.publish(batch))
      return;
    ++frames;
  }
}

TEST_F(ShutdownTest, SigtermUnderLoadExitsZeroWithinGraceWithUnavailable) {
  // A subscriber that takes its Subscribed frame and then never reads.
  grpc::ClientContext stuck_ctx;
  stuck_ctx.set_deadline(std::chrono::system_clock::now() + 60s);
  auto stuck = conn_->stub().Session(&stuck_ctx);
  pb::ClientFrame subscribe;
  subscribe.mutable_subscribe()->set_subscription_id(1);
  subscribe.mutable_subscribe()->set_pattern("load.>");
  ASSERT_TRUE(stuck->Write(subscribe));
  pb::ServerFrame frame;
  ASSERT_TRUE(stuck->Read(&frame));
  ASSERT_TRUE(frame.has_subscribed());

  // An idle subscriber and a publisher, through the client library.
  auto idle = subscriber(1, "idle.>");
  auto publisher = conn_->open_session();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> frames{0};
  std::thread load{[&] {
    publish_load(*publisher, stop, frames);
  }};
  // Load until far more went out than the stuck subscriber's transport
  // windows hold (64 MiB).
  bool loaded = eventually([&] { return frames.load() >= 1000; }, 20s);
  EXPECT_TRUE(loaded) << "published only " << frames.load() << " frames";

  auto sent = std::chrono::steady_clock::now();
  auto code = broker_->stop(SIGTERM, grace + 5s);
  auto took = std::chrono::steady_clock::now() - sent;
  stop.store(true);
  if (!code)
    publisher->cancel(); // a write blocked on a hung broker returns
  load.join();
  ASSERT_TRUE(code.has_value()) << "no exit within grace + 5 s";
  EXPECT_EQ(*code, 0) << broker_->output();
  EXPECT_LE(took, grace + 1s)
      << "exit took "
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms";
  RecordProperty(
      "exit_ms",
      std::to_string(
          std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));

  for (auto* session : {idle.get(), publisher.get()}) {
    ASSERT_TRUE(eventually([&] { return session->ended(); }, patience));
    auto status = session->status();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << status.error_message();
  }
  EXPECT_NE(idle->status().error_message().find("shutting down"),
            std::string::npos)
      << "the broker did not end the stream itself: "
      << idle->status().error_message();
  // The stuck stream: take what the transport still holds, then its status.
  for (int i = 0; i < 1000000 && stuck->Read(&frame); ++i)
    ; // nop
  auto status = stuck->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

} // namespace
} // namespace tb::test
