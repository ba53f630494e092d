// The checks of tinybroker-soak (tools/soak/soak_check.hpp) on hand-made
// logs: a lost message, a duplicate that is not a redelivery, a rejected
// message missing from the dead letter topic, and the RSS verdict.

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tools/soak/soak_check.hpp"

namespace tb::soak {
namespace {

// Gives `text` to `read` of `l` as a log file (the ledger reads its logs
// from files), through a temporary file removed after; returns what `read`
// returned.
bool feed(ledger& l, bool (ledger::*read)(const std::string&),
          const std::string& text) {
  std::string path = "/tmp/tinybroker-soak-check-XXXXXX";
  auto fd = mkstemp(path.data());
  EXPECT_GE(fd, 0);
  std::ofstream{path} << text;
  ::close(fd);
  auto ok = (l.*read)(path);
  std::remove(path.c_str());
  return ok;
}

// A ledger of three published messages p0-0..p0-2, ids 1..3.
ledger three_published() {
  ledger l;
  EXPECT_TRUE(feed(l, &ledger::read_publisher_log,
                   "p0-0 1\np0-1 2\np0-2 3\n! p0-3 group_full\n"));
  return l;
}

TEST(SoakCheck, RedeliveriesAreCountedAndATornLineIgnored) {
  auto l = three_published();
  ASSERT_TRUE(feed(l, &ledger::read_worker_log,
                   "p0-0 1 1 a\np0-1 2 1 a\np0-2 3 1 a\np0-2 3 2 a\n"
                   "p0-1 2 2 a\np0-1 2"));
  auto r = l.check();
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.published, 3u);
  EXPECT_EQ(r.refused, 1u);
  EXPECT_EQ(r.acked, 3u);
  EXPECT_EQ(r.deliveries, 5u);
  EXPECT_EQ(r.redeliveries, 2u);
  EXPECT_EQ(r.duplicates, 0u);
}

TEST(SoakCheck, AMessageNeitherAckedNorDeadLetteredIsLost) {
  auto l = three_published();
  ASSERT_TRUE(feed(l, &ledger::read_worker_log, "p0-0 1 1 a\np0-2 3 1 a\n"));
  auto r = l.check();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.lost, 1u);
  ASSERT_EQ(r.lost_examples.size(), 1u);
  EXPECT_EQ(r.lost_examples[0], "p0-1 (id 2)");
}

TEST(SoakCheck, TheSameAttemptTwiceIsADuplicate) {
  auto l = three_published();
  ASSERT_TRUE(feed(l, &ledger::read_worker_log,
                   "p0-0 1 1 a\np0-1 2 1 a\np0-2 3 1 a\np0-2 3 1 a\n"));
  auto r = l.check();
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_FALSE(r.ok());
}

TEST(SoakCheck, ARejectedMessageMustBeDeadLettered) {
  auto l = three_published();
  ASSERT_TRUE(feed(l, &ledger::read_worker_log,
                   "p0-0 1 1 a\np0-1 2 1 a\np0-2 3 1 r\n"));
  EXPECT_EQ(l.check().rejected_not_dead_lettered, 1u);
  EXPECT_EQ(l.check().lost, 1u);
  ASSERT_TRUE(feed(l, &ledger::read_dead_letter_log,
                   "p0-2\nreceived 1 dropped 0 out_of_order 0 ended 0\n"));
  auto r = l.check();
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.dead_lettered, 1u);
  EXPECT_EQ(r.acked, 2u);
}

TEST(SoakCheck, AMayOrMayNotRefusalDeliveredIsCountedNotUnknown) {
  // node_unavailable (a batch whose replica went before it acknowledged it)
  // may come all the same; group_full never does.
  ledger l;
  ASSERT_TRUE(feed(l, &ledger::read_publisher_log,
                   "p0-0 1\n! p0-1 node_unavailable\n! p0-2 group_full\n"));
  ASSERT_TRUE(feed(l, &ledger::read_worker_log, "p0-0 1 1 a\np0-1 2 1 a\n"));
  auto r = l.check();
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.refused, 2u);
  EXPECT_EQ(r.maybe_delivered, 1u);
  EXPECT_EQ(r.unknown, 0u);
  ASSERT_TRUE(feed(l, &ledger::read_worker_log, "p0-2 3 1 a\n"));
  EXPECT_EQ(l.check().unknown, 1u) << "a group_full refusal never comes";
}

TEST(SoakCheck, RssIsFlatWithinTheMarginAndGrowsBeyondIt) {
  std::vector<rss_sample> flat, growing;
  for (int t = 0; t <= 60; ++t) {
    flat.push_back({static_cast<double>(t), 20000 + (t < 5 ? 0 : 3000)});
    growing.push_back({static_cast<double>(t), 20000 + t * 500});
  }
  auto v = judge_rss(flat, 20, 8);
  EXPECT_TRUE(v.judged);
  EXPECT_TRUE(v.flat);
  EXPECT_EQ(v.start_kib, 23000);
  v = judge_rss(growing, 20, 8);
  EXPECT_TRUE(v.judged);
  EXPECT_FALSE(v.flat) << v.start_kib << " -> " << v.end_kib;
  EXPECT_FALSE(judge_rss({{0, 1}, {1, 2}}, 20, 8).judged);
}

} // namespace
} // namespace tb::soak
