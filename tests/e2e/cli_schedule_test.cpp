// End to end: tinybroker-cli pub --ttl, --delay and --priority (issue 29)
// against a real broker, and the fan-out line of `stats`.

#include <chrono>
#include <string>

#include "cli_fixture.hpp"

namespace tb::test {
namespace {

using clock_type = std::chrono::steady_clock;

TEST_F(CliTest, PubDelayHoldsTheMessageAndStatsShowsItScheduled) {
  auto sub = start_sub({"later.>", "--count", "1", "--json"});
  auto start = clock_type::now();
  auto [code, out] = cli({"pub", "later.x", "job", "--delay", "1500ms", "--ttl",
                          "1h", "--priority", "7"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_EQ(published_ids(out).size(), 1u) << out;
  auto [stats_code, stats] = cli({"stats"});
  ASSERT_EQ(stats_code, 0) << stats;
  EXPECT_NE(stats.find("fan-out   scheduled 1 (next due in "),
            std::string::npos)
      << stats;
  auto [json_code, json] = cli({"--json", "stats"});
  ASSERT_EQ(json_code, 0) << json;
  auto reply = parse_json(json);
  auto broker = reply.fields().at("broker").struct_value();
  EXPECT_EQ(broker.fields().at("fanout_scheduled").number_value(), 1);
  ASSERT_EQ(sub->wait_exit(patience), 0) << sub->output();
  EXPECT_GE(clock_type::now() - start, std::chrono::milliseconds(1500));
  auto deliveries = lines_starting_with(sub->output(), "{");
  ASSERT_EQ(deliveries.size(), 1u) << sub->output();
  auto d = parse_json(deliveries[0]).fields();
  EXPECT_EQ(d["payload"].string_value(), "job");
}

TEST_F(CliTest, PubRefusesABadPriorityAndABadDuration) {
  auto [code, out] = cli({"pub", "later.x", "job", "--priority", "10"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--priority"), std::string::npos) << out;
  std::tie(code, out) = cli({"pub", "later.x", "job", "--delay", "soon"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--delay"), std::string::npos) << out;
}

TEST_F(CliTest, PubDelayBeyondTheBrokersMaxDelayIsRefused) {
  auto [code, out] = cli({"pub", "later.x", "job", "--delay", "8000h"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("limits.max_delay"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
