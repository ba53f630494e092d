// End to end, spec 6 under faults (issue 10, section 4): group workers are
// real processes (tinybroker-soak in its worker role) killed with SIGKILL
// mid-batch, mid-ack and mid-delivery while another member works; every
// message the group held is delivered again and acked, none is lost, and
// the only duplicates are redeliveries.

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "client_fixture.hpp"
#include "tools/soak/soak_check.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

// The messages each test publishes.
constexpr int message_count = 1000;

// The exit code of a process killed by SIGKILL, as child_process reports it.
constexpr int killed = 128 + SIGKILL;

class FaultsTest : public AsyncClientTest {
protected:
  void SetUp() override {
    AsyncClientTest::SetUp();
    std::string tmpl = "/tmp/tinybroker-faults-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // A long ack_wait: redeliveries here come from the stream's end, not
    // from a timeout. Unlimited deliveries: nothing is dead-lettered.
    pb::CreateGroupRequest request;
    request.set_name("faults");
    request.mutable_settings()->set_pattern("jobs.>");
    request.mutable_settings()->set_ack_wait_ms(60000);
    request.mutable_settings()->set_unlimited_deliveries(true);
    pb::GroupInfo info;
    grpc::ClientContext ctx;
    auto status = conn_->stub().CreateGroup(&ctx, request, &info);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }

  void TearDown() override {
    workers_.clear();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    AsyncClientTest::TearDown();
  }

  // Starts a worker process of group "faults" with `extra` arguments and
  // waits until it joined.
  child_process& start_worker(std::vector<std::string> extra) {
    auto name = dir_ + "/worker-" + std::to_string(workers_.size());
    logs_.push_back(name + ".log");
    std::vector<std::string> args{
        "worker",  "--server",      broker_->address(), "--log",  name + ".log",
        "--ready", name + ".ready", "--group",          "faults", "--pattern",
        "jobs.>"};
    args.insert(args.end(), extra.begin(), extra.end());
    workers_.push_back(
        std::make_unique<child_process>(TINYBROKER_SOAK_BINARY, args));
    EXPECT_TRUE(eventually([&] {
      return access((name + ".ready").c_str(), F_OK) == 0;
    })) << workers_.back()->output();
    return *workers_.back();
  }

  // Publishes messages keyed p0-<first> to p0-<first + count - 1> in
  // batches of 100 and records each accepted id in `ledger_`.
  void publish(int first = 0, int count = message_count) {
    for (int seq = first; seq < first + count;) {
      std::vector<client::outgoing_message> batch;
      for (int i = 0; i < 100; ++i, ++seq) {
        auto key = "p0-" + std::to_string(seq);
        batch.push_back({"jobs." + std::to_string(seq % 3), key, {}, {}});
      }
      std::vector<pb::PublishResult> results;
      auto status = conn_->publish(batch, &results);
      ASSERT_TRUE(status.ok()) << status.error_message();
      for (std::size_t i = 0; i < batch.size(); ++i) {
        ASSERT_FALSE(results[i].has_error()) << results[i].error().message();
        ledger_.add_published(soak::pack_key(batch[i].payload),
                              results[i].id());
      }
    }
  }

  // Runs one dying worker (`die_args`) beside a
  // healthy one, waits for the death and the drain, and checks the logs.
  void run_with_dying_worker(std::vector<std::string> die_args,
                             bool expect_logged_redelivery,
                             bool expect_redelivery = true) {
    auto& healthy = start_worker({"--max-in-flight", "16", "--work-us", "500"});
    auto& dying = start_worker(std::move(die_args));
    publish();
    EXPECT_EQ(dying.wait_exit(patience), killed) << dying.output();
    expect_drained_and_complete(healthy, expect_logged_redelivery,
                                expect_redelivery);
  }

  // Waits until the group acked every message and holds nothing, stops
  // `healthy`, and checks every message was acked once, with redeliveries
  // only as attempts above 1.
  void expect_drained_and_complete(child_process& healthy,
                                   bool expect_logged_redelivery,
                                   bool expect_redelivery = true) {
    EXPECT_TRUE(eventually([&] {
      auto c = group_info("faults").counters();
      return c.acked() == message_count && c.pending() == 0 &&
             c.in_flight() == 0;
    })) << group_info("faults").DebugString();
    auto counters = group_info("faults").counters();
    if (expect_redelivery) {
      EXPECT_GT(counters.redelivered(), 0u) << "the killed worker held nothing";
    }
    EXPECT_EQ(healthy.stop(SIGTERM), 0) << healthy.output();
    for (auto& log : logs_)
      ASSERT_TRUE(ledger_.read_worker_log(log)) << log;
    auto result = ledger_.check();
    EXPECT_EQ(result.published, static_cast<uint64_t>(message_count));
    EXPECT_EQ(result.acked, static_cast<uint64_t>(message_count));
    EXPECT_EQ(result.lost, 0u)
        << ::testing::PrintToString(result.lost_examples);
    EXPECT_EQ(result.duplicates, 0u);
    EXPECT_EQ(result.unknown, 0u);
    EXPECT_EQ(result.dead_lettered, 0u);
    if (expect_logged_redelivery) {
      EXPECT_GT(result.redeliveries, 0u);
    }
    RecordProperty("redelivered", std::to_string(counters.redelivered()));
  }

  std::string dir_;
  std::vector<std::string> logs_;
  std::vector<std::unique_ptr<child_process>> workers_;
  soak::ledger ledger_;
};

TEST_F(FaultsTest, WorkerKilledMidBatchHasTheUnansweredHalfRedelivered) {
  // Answers half of a frame after 100 deliveries, then SIGKILLs itself:
  // the other half (never logged) must come back as attempt 2.
  run_with_dying_worker(
      {"--max-in-flight", "64", "--die-at", "batch", "--die-after", "100"},
      true);
}

TEST_F(FaultsTest, WorkerKilledMidAckLosesNothing) {
  // Logs and sends its acks after 100 deliveries, then SIGKILLs itself
  // while they are in flight: acks that arrived count, the rest are
  // redelivered; either way each message is acked once. On a busy machine
  // every ack may arrive and the worker hold nothing more (the broker had
  // sent nothing new yet), so a redelivery is allowed, not required.
  run_with_dying_worker(
      {"--max-in-flight", "64", "--die-at", "ack", "--die-after", "100"}, false,
      false);
}

TEST_F(FaultsTest, WorkerKilledMidDeliveryHasItsDeliveriesRedelivered) {
  // SIGKILLs itself as a Deliveries frame arrives, before handling it:
  // that frame and whatever else was on its way come back.
  run_with_dying_worker(
      {"--max-in-flight", "64", "--die-at", "delivery", "--die-after", "100"},
      true);
}

TEST_F(FaultsTest, WorkersKilledFromOutsideWhileHoldingTheirPrefetch) {
  // Two slow workers in turn, each the group's only member, are killed by
  // the test with SIGKILL once they hold most of their prefetch; then a
  // healthy worker joins and must get everything.
  for (int round = 0; round < 2; ++round) {
    auto& slow = start_worker({"--max-in-flight", "32", "--work-us", "20000"});
    publish(round * message_count / 2, message_count / 2);
    EXPECT_TRUE(eventually(
        [&] { return group_info("faults").counters().in_flight() >= 24; }));
    EXPECT_EQ(slow.stop(SIGKILL), killed);
  }
  auto& healthy = start_worker({"--max-in-flight", "16", "--work-us", "200"});
  expect_drained_and_complete(healthy, true);
}

} // namespace
} // namespace tb::test
