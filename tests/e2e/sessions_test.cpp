// End to end (issue 10, section 4): 1,000 concurrent Session streams, over
// ten client connections, are served at once: every one subscribes, then
// every one publishes to its neighbour's topic and receives its
// neighbour's message while all 1,000 stay open.

#include <memory>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "e2e_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

// Streams, and client connections they share.
constexpr int session_count = 1000;
constexpr int channel_count = 10;

// The whole test's time budget.
constexpr auto budget = 60s;

using SessionsTest = BrokerTest;

// Raises the soft limit of open files to the hard limit (the broker
// inherits it): 1,000 streams need few descriptors here, but a tighter
// system default should not make the test fail.
void raise_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
      limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// Milliseconds left until `deadline`, at least 1.
std::chrono::milliseconds left(std::chrono::steady_clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return std::max(ms, std::chrono::milliseconds(1));
}

TEST_F(SessionsTest, AThousandConcurrentSessionsAreServedAtOnce) {
  raise_file_limit();
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + budget;
  // Distinct channel arguments give each connection its own TCP
  // connection instead of a shared subchannel.
  std::vector<std::unique_ptr<client::connection>> conns;
  for (int c = 0; c < channel_count; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("tinybroker.test.channel", c);
    conns.push_back(std::make_unique<client::connection>(
        client::make_channel(broker_->address(), args)));
    ASSERT_TRUE(conns.back()->wait_connected(patience));
  }
  std::vector<std::unique_ptr<client::session>> sessions;
  for (int i = 0; i < session_count; ++i) {
    sessions.push_back(conns[i % channel_count]->open_session());
    ASSERT_TRUE(sessions.back()->subscribe(1, "many." + std::to_string(i)));
  }
  for (int i = 0; i < session_count; ++i) {
    auto frame =
        sessions[i]->wait_for(pb::ServerFrame::kSubscribed, left(deadline));
    ASSERT_TRUE(frame.has_value()) << "session " << i << " not subscribed";
  }
  // Every stream is open and subscribed; each now publishes to the next
  // one's topic.
  for (int i = 0; i < session_count; ++i) {
    auto topic = "many." + std::to_string((i + 1) % session_count);
    ASSERT_TRUE(
        sessions[i]->publish({{topic, "from " + std::to_string(i), {}, {}}}));
  }
  for (int i = 0; i < session_count; ++i) {
    auto got = sessions[i]->receive(1, left(deadline));
    ASSERT_EQ(got.size(), 1u) << "session " << i << " received nothing";
    auto from = (i + session_count - 1) % session_count;
    EXPECT_EQ(got[0].payload(), "from " + std::to_string(from));
  }
  for (int i = 0; i < session_count; ++i)
    EXPECT_FALSE(sessions[i]->ended()) << "session " << i << " ended early";
  auto served = std::chrono::steady_clock::now() - start;
  EXPECT_LT(served, budget);
  RecordProperty(
      "served_ms",
      std::to_string(
          std::chrono::duration_cast<std::chrono::milliseconds>(served)
              .count()));
  for (auto& s : sessions) {
    auto status = s->close(left(deadline));
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
}

} // namespace
} // namespace tb::test
