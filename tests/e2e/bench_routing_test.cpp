// End to end: the routing scenarios of the load generator (issue 15) run at
// a tiny size against a real broker whose idle topics expire after 1 s, and
// report sane numbers (no timing assertions).

#include <regex>
#include <string>
#include <vector>

#include "e2e_fixture.hpp"
#include "json_fields.hpp"

namespace tb::test {
namespace {

// A broker whose idle topics expire quickly, for scenario expiry.
class BenchRoutingTest : public BrokerTest {
protected:
  std::vector<std::string> broker_args() override {
    return {"--config",
            write_temp_file("topic_idle_timeout = \"1s\"\n", "toml")};
  }

  // Runs tinybroker-bench with `args` after the server and the broker's
  // pid, asking for JSON; returns its exit code and output.
  std::pair<int, std::string> bench(std::vector<std::string> args) {
    std::vector<std::string> all{"--server",
                                 broker_->address(),
                                 "--broker-pid",
                                 std::to_string(broker_->pid()),
                                 "--json",
                                 "--max-seconds",
                                 "60"};
    all.insert(all.end(), args.begin(), args.end());
    return run_command(std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-bench",
                       all);
  }
};

// Expects p50 <= p99 <= max of the round trips named `key`, above zero.
void expect_ordered(const std::string& out, const std::string& key) {
  auto p50 = json_number(out, key + "_p50_ms");
  auto p99 = json_number(out, key + "_p99_ms");
  auto max = json_number(out, key + "_max_ms");
  EXPECT_GT(p50, 0) << out;
  EXPECT_LE(p50, p99) << out;
  EXPECT_LE(p99, max) << out;
}

TEST_F(BenchRoutingTest, TopicsNewConfirmsOneMessagePerNewTopic) {
  auto [code, out] =
      bench({"--scenario", "topics-new", "--topics", "300", "--batch", "64"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"scenario\":\"topics-new\""), std::string::npos) << out;
  EXPECT_EQ(json_number(out, "topics"), 300) << out;
  EXPECT_EQ(json_number(out, "sent"), 300) << out;
  EXPECT_EQ(json_number(out, "publish_errors"), 0) << out;
  EXPECT_EQ(json_number(out, "live_topics"), 300) << out;
  EXPECT_GT(json_number(out, "topics_per_s"), 0) << out;
  EXPECT_GE(json_number(out, "broker_cpu_s"), 0) << out;
  EXPECT_GE(json_number(out, "broker_cpu_us_per_topic"), 0) << out;
}

TEST_F(BenchRoutingTest, SubscribeRateConfirmsEverySubscribe) {
  auto [code, out] = bench({"--scenario", "subscribe-rate", "--subscribes",
                            "300", "--in-flight", "16"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "confirmed"), 300) << out;
  EXPECT_EQ(json_number(out, "refused"), 0) << out;
  EXPECT_EQ(json_number(out, "in_flight"), 16) << out;
  EXPECT_GT(json_number(out, "subscribes_per_s"), 0) << out;
  EXPECT_GT(json_number(out, "first_10pct_us"), 0) << out;
  EXPECT_GT(json_number(out, "last_10pct_us"), 0) << out;
  EXPECT_GE(json_number(out, "broker_cpu_us_per_subscribe"), 0) << out;
}

TEST_F(BenchRoutingTest, SubscribeRateInBatchesConfirmsEverySubscribe) {
  auto [code, out] = bench({"--scenario", "subscribe-rate", "--subscribes",
                            "300", "--in-flight", "128", "--per-frame", "64"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "confirmed"), 300) << out;
  EXPECT_EQ(json_number(out, "refused"), 0) << out;
  EXPECT_EQ(json_number(out, "per_frame"), 64) << out;
}

TEST_F(BenchRoutingTest, SubscribeOneTopicInBatchesReachesEverySubscription) {
  auto [code, out] = bench({"--scenario", "subscribe-one-topic", "--subscribes",
                            "200", "--per-frame", "50"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "confirmed"), 200) << out;
  EXPECT_EQ(json_number(out, "deliveries"), 200) << out;
}

TEST_F(BenchRoutingTest, WithoutJsonEachFigureIsALineOfItsOwn) {
  auto [code, out] =
      run_command(std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-bench",
                  {"--server", broker_->address(), "--scenario",
                   "subscribe-rate", "--subscribes", "20"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\nconfirmed "), std::string::npos) << out;
  EXPECT_NE(out.find("\nrefused "), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n') << out;
}

TEST_F(BenchRoutingTest, SubscribeOneTopicReachesEverySubscription) {
  auto [code, out] =
      bench({"--scenario", "subscribe-one-topic", "--subscribes", "200"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "confirmed"), 200) << out;
  EXPECT_EQ(json_number(out, "deliveries"), 200) << out;
  EXPECT_GT(json_number(out, "first_10pct_us"), 0) << out;
  EXPECT_GT(json_number(out, "last_10pct_us"), 0) << out;
  // A ratio printed with two decimals: a burst of answers can make the
  // last tenth's round trips so short that it reads 0.00.
  EXPECT_GE(json_number(out, "growth"), 0) << out;
}

TEST_F(BenchRoutingTest, SubscribeWildcardTimesEachRepeat) {
  auto [code, out] = bench({"--scenario", "subscribe-wildcard", "--topics",
                            "300", "--repeats", "3"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "live_topics"), 300) << out;
  EXPECT_EQ(json_number(out, "repeats"), 3) << out;
  EXPECT_GT(json_number(out, "first_ms"), 0) << out;
  EXPECT_LE(json_number(out, "median_ms"), json_number(out, "max_ms")) << out;
  EXPECT_TRUE(std::regex_search(
      out, std::regex{"\"each_ms\":\\[[0-9.]+,[0-9.]+,[0-9.]+\\]"}))
      << out;
}

TEST_F(BenchRoutingTest, ExpiryProbesWhileTheTopicsExpire) {
  auto [code, out] = bench({"--scenario", "expiry", "--topics", "300",
                            "--window", "3", "--batch", "64"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(json_number(out, "live_topics_before"), 300) << out;
  // Idle for 1 s, the topics expire within the 3 s window.
  EXPECT_LT(json_number(out, "live_topics_after"), 300) << out;
  EXPECT_GT(json_number(out, "probes"), 0) << out;
  expect_ordered(out, "subscribe");
  expect_ordered(out, "unsubscribe");
  expect_ordered(out, "new_topic");
  EXPECT_GE(json_number(out, "worst_ms"), json_number(out, "subscribe_max_ms"))
      << out;
  EXPECT_GE(json_number(out, "broker_cpu_s"), 0) << out;
}

TEST_F(BenchRoutingTest, TopicMemoryReadsTheBrokerConnectedAndClosed) {
  auto [code, out] = bench({"--scenario", "topic-memory", "--topics", "300"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_GT(json_number(out, "rss_before_kib"), 0) << out;
  EXPECT_GT(json_number(out, "rss_connected_kib"), 0) << out;
  EXPECT_GT(json_number(out, "rss_closed_kib"), 0) << out;
  EXPECT_EQ(json_number(out, "live_topics_connected"), 300) << out;
  EXPECT_NE(out.find("\"bytes_per_topic_connected\""), std::string::npos)
      << out;
  EXPECT_NE(out.find("\"bytes_per_topic_closed\""), std::string::npos) << out;
}

TEST_F(BenchRoutingTest, FanoutReportsTheBrokersCpuWhenGivenItsPid) {
  auto [code, out] = bench({"--messages", "2000", "--batch", "100", "--paced"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_GE(json_number(out, "broker_cpu_s"), 0) << out;
  auto [without_code, without] = run_command(
      std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-bench",
      {"--server", broker_->address(), "--messages", "100", "--json"});
  EXPECT_EQ(without_code, 0) << without;
  EXPECT_NE(without.find("\"broker_cpu_s\":null"), std::string::npos)
      << without;
}

TEST_F(BenchRoutingTest, TopicMemoryNeedsTheBrokersPid) {
  auto [code, out] =
      run_command(std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-bench",
                  {"--server", broker_->address(), "--scenario", "topic-memory",
                   "--topics", "10"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--broker-pid"), std::string::npos) << out;
  // Found during the run, the error is still JSON with --json.
  auto [json_code, json_out] =
      run_command(std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-bench",
                  {"--server", broker_->address(), "--scenario", "topic-memory",
                   "--topics", "10", "--broker-pid", "999999999", "--json"});
  EXPECT_EQ(json_code, 2) << json_out;
  EXPECT_NE(json_out.find("{\"error\":{\"code\":\"INVALID_ARGUMENT\","
                          "\"message\":\"cannot read the memory of process"),
            std::string::npos)
      << json_out;
}

} // namespace
} // namespace tb::test
