// The cluster book's rules without sockets (issue 30, docs/cluster.md):
// which greetings a node accepts, when it redials and how long it waits,
// and when it is ready.

#include <gtest/gtest.h>

#include "actors/cluster/cluster_book.hpp"

namespace tb {
namespace {

using namespace std::chrono_literals;

// A greeting of node `name` (node id `node_id`, epoch `epoch`) at `address`.
cluster_hello hello_of(std::string name, std::string node_id, uint64_t epoch,
                       std::string address) {
  cluster_hello h;
  h.name = std::move(name);
  h.version = "v1";
  h.node_id = std::move(node_id);
  h.epoch = epoch;
  h.address = std::move(address);
  return h;
}

class ClusterBookTest : public ::testing::Test {
protected:
  cluster_book book{"n2", "id-n2", "v1", {"a:1", "c:3"}, 0};
};

TEST_F(ClusterBookTest, AcceptsANewNodeAndAnswersItsSecondGreeting) {
  auto h = hello_of("n1", "id-n1", 10, "a:1");
  EXPECT_EQ(book.judge(h).kind, hello_verdict::fresh);
  book.record_up(h, 5);
  EXPECT_EQ(book.judge(h).kind, hello_verdict::same);
}

TEST_F(ClusterBookTest, RefusesItsOwnNameAnotherVersionAndAnotherLiveHolder) {
  auto own = hello_of("n2", "id-x", 10, "x:9");
  auto verdict = book.judge(own);
  EXPECT_EQ(verdict.kind, hello_verdict::refuse);
  EXPECT_NE(verdict.reason.find("duplicate node name \"n2\""),
            std::string::npos)
      << verdict.reason;
  auto old = hello_of("n1", "id-n1", 10, "a:1");
  old.version = "v0";
  EXPECT_EQ(book.judge(old).kind, hello_verdict::refuse);
  EXPECT_NE(book.judge(old).reason.find("cluster protocol \"v0\""),
            std::string::npos);
  auto first = hello_of("n1", "id-n1", 10, "a:1");
  book.record_up(first, 5);
  auto second = hello_of("n1", "id-other", 11, "b:2");
  verdict = book.judge(second);
  EXPECT_EQ(verdict.kind, hello_verdict::refuse);
  EXPECT_NE(verdict.reason.find("is connected under this name"),
            std::string::npos)
      << verdict.reason;
  auto same_id = hello_of("n9", "id-n2", 10, "z:1");
  EXPECT_EQ(book.judge(same_id).kind, hello_verdict::refuse);
}

TEST_F(ClusterBookTest, ARestartedNodeReplacesItsOldEpochOnceDown) {
  auto first = hello_of("n3", "id-n3", 10, "c:3");
  book.record_up(first, 5);
  book.record_synced("n3", 10, 6);
  // n2 < n3: n2 redials n3's address.
  EXPECT_EQ(book.record_down("n3", 7), std::vector<std::string>{"c:3"});
  auto again = hello_of("n3", "id-n3b", 20, "c:3");
  EXPECT_EQ(book.judge(again).kind, hello_verdict::rejoin);
  auto& p = book.record_up(again, 8);
  EXPECT_EQ(p.epoch, 20u);
  EXPECT_EQ(p.reconnects, 1u);
  EXPECT_EQ(p.state, peer_state::syncing);
}

TEST_F(ClusterBookTest, OnlyTheSmallerNameRedials) {
  book.record_met("a:1", "n1", 1);
  book.record_up(hello_of("n1", "id-n1", 10, "a:1"), 1);
  EXPECT_FALSE(book.should_dial("a:1")); // live
  // n1 < n2: n1 redials this node, so n2 waits.
  EXPECT_TRUE(book.record_down("n1", 2).empty());
  EXPECT_FALSE(book.should_dial("a:1"));
  book.record_met("c:3", "n3", 1);
  book.record_up(hello_of("n3", "id-n3", 10, "c:3"), 1);
  book.record_down("n3", 2);
  EXPECT_TRUE(book.should_dial("c:3"));
}

TEST_F(ClusterBookTest, BackoffDoublesFrom100msTo2sAndResetsOnSuccess) {
  std::vector<std::chrono::milliseconds> delays;
  for (int i = 0; i < 7; ++i)
    delays.push_back(book.record_dial_failed("a:1", "refused", i));
  EXPECT_EQ(delays, (std::vector<std::chrono::milliseconds>{
                        100ms, 200ms, 400ms, 800ms, 1600ms, 2000ms, 2000ms}));
  EXPECT_EQ(book.slot("a:1").failed_dials, 7u);
  book.record_met("a:1", "n1", 8);
  EXPECT_EQ(book.record_dial_failed("a:1", "refused", 9), 100ms);
}

TEST_F(ClusterBookTest,
       ReadyOnceEveryConfiguredPeerSyncedOrFailedItsFirstDial) {
  EXPECT_FALSE(book.ready());
  book.record_dial_failed("c:3", "connection refused", 1);
  EXPECT_FALSE(book.ready()); // a:1 not answered yet
  auto h = hello_of("n1", "id-n1", 10, "a:1");
  book.record_up(h, 2);
  book.record_met("a:1", "n1", 2);
  EXPECT_FALSE(book.ready()); // greeted, but its first sync is under way
  book.record_synced("n1", 10, 3);
  EXPECT_TRUE(book.ready());
}

TEST_F(ClusterBookTest, ReadyAtTheDeadlineWithoutAnswers) {
  book.record_deadline();
  EXPECT_TRUE(book.ready());
  cluster_book alone{"solo", "id", "v1", {}, 0};
  EXPECT_TRUE(alone.ready());
}

TEST_F(ClusterBookTest, ViewListsMetPeersByNameAndSilentAddresses) {
  book.record_up(hello_of("n1", "id-n1", 10, "a:1"), 2);
  book.record_met("a:1", "n1", 2);
  book.record_dial_failed("c:3", "duplicate", 3, true);
  auto v = book.view();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].name, "");
  EXPECT_EQ(v[0].address, "c:3");
  EXPECT_EQ(v[0].state, "refused");
  EXPECT_EQ(v[0].last_error, "duplicate");
  EXPECT_EQ(v[1].name, "n1");
  EXPECT_EQ(v[1].state, "syncing");
}

} // namespace
} // namespace tb
