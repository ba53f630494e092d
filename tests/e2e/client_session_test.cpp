// End to end (issue 13, point 5): the client's `session` has no thread of
// its own. The thread that waits in `next()` reads the broker's frame
// itself, so a delivery reaches the caller without a hand-over between
// threads, and a thread that sends while another waits in `next()` is not
// held up by it.

#include <atomic>
#include <chrono>
#include <dirent.h>
#include <fstream>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

#include "client/session.hpp"
#include "e2e_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

using ClientSessionTest = BrokerTest;

// How many threads this process has now.
int thread_count() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir))
      if (entry->d_name[0] != '.')
        ++count;
    closedir(dir);
  }
  return count;
}

// The scheduler state of thread `tid` of this process ('S': sleeping in
// the kernel, 'R': running), or 0 if it cannot be read.
char thread_state(pid_t tid) {
  std::ifstream stat{"/proc/self/task/" + std::to_string(tid) + "/stat"};
  std::string line;
  std::getline(stat, line);
  auto paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size()
             ? 0
             : line[paren + 2];
}

// Publishes one message to `topic` and expects `session` to receive it.
void round_trip(client::connection& conn, client::session& session,
                const std::string& topic) {
  ASSERT_TRUE(conn.publish({{topic, "x", {}, {}}}).ok());
  auto got = session.receive(1, patience);
  ASSERT_EQ(got.size(), 1u) << topic;
  EXPECT_EQ(got[0].topic(), topic);
}

TEST_F(ClientSessionTest, SessionsStartNoThreads) {
  // The first session and publish start what gRPC itself starts once.
  auto first = subscriber(1, "warm.up");
  round_trip(*conn_, *first, "warm.up");
  int before = thread_count();
  constexpr int more = 8;
  std::vector<std::unique_ptr<client::session>> sessions;
  for (int i = 0; i < more; ++i) {
    auto topic = "t." + std::to_string(i);
    sessions.push_back(subscriber(1, topic));
    round_trip(*conn_, *sessions.back(), topic);
  }
  // A reader thread per session would add 8; allow gRPC a pool thread.
  EXPECT_LE(thread_count() - before, 1)
      << "threads before " << before << ", after " << thread_count();
  for (auto& session : sessions)
    EXPECT_TRUE(session->close(patience).ok());
}

TEST_F(ClientSessionTest, ASendIsNotHeldUpByAThreadWaitingInNext) {
  auto session = conn_->open_session();
  std::atomic<pid_t> reader_tid{0};
  auto reader = std::async(std::launch::async, [&] {
    reader_tid = static_cast<pid_t>(syscall(SYS_gettid));
    return session->next(60s);
  });
  // Until the reader thread sleeps in the kernel: blocked in next().
  auto deadline = std::chrono::steady_clock::now() + patience;
  while ((reader_tid == 0 || thread_state(reader_tid) != 'S') &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  ASSERT_EQ(thread_state(reader_tid), 'S') << "the reader never blocked";
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(session->subscribe(7, "held.up", "", 1));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 5s) << "send waited for the reader's timeout";
  ASSERT_EQ(reader.wait_for(patience), std::future_status::ready);
  auto frame = reader.get();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->kind_case(), pb::ServerFrame::kSubscribed);
  EXPECT_EQ(frame->subscribed().subscription_id(), 7u);
}

TEST_F(ClientSessionTest, EndedNoticesTheEndWithoutACallToNext) {
  auto session = subscriber(1, "end.me");
  ASSERT_FALSE(session->ended());
  broker_->stop(SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!session->ended() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(session->ended());
  EXPECT_EQ(session->status().error_code(), grpc::StatusCode::UNAVAILABLE)
      << session->status().error_message();
}

TEST_F(ClientSessionTest, CloseKeepsTheFramesNotYetTaken) {
  auto session = subscriber(1, "kept");
  publish({"kept", "kept", "kept"});
  // Wait until all three are sent to this session (on the broker's side).
  auto watcher = subscriber(2, "kept.done");
  publish({"kept.done"});
  ASSERT_EQ(watcher->receive(1, patience).size(), 1u);
  EXPECT_TRUE(session->close(patience).ok());
  EXPECT_EQ(session->receive(3, 1s).size(), 3u);
}

} // namespace
} // namespace tb::test
