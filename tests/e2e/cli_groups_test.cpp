// End to end: tinybroker-cli groups, group workers answering with --ack,
// --nack, --reject and --no-ack (the README tour), and bench.

#include <chrono>
#include <csignal>
#include <map>
#include <set>
#include <string>

#include "cli_fixture.hpp"

namespace tb::test {
namespace {

using CliGroupsTest = CliTest;

// Returns the groups of a `groups ls --json` output, by name.
std::map<std::string, google::protobuf::Struct>
listed_groups(const std::string& out) {
  std::map<std::string, google::protobuf::Struct> result;
  auto reply = parse_json(out).fields();
  for (auto& group : reply["groups"].list_value().values())
    result[group.struct_value().fields().at("name").string_value()] =
        group.struct_value();
  return result;
}

// Returns the number in `group` at `section`.`name`.
double field(const google::protobuf::Struct& group, const std::string& section,
             const std::string& name) {
  return group.fields()
      .at(section)
      .struct_value()
      .fields()
      .at(name)
      .number_value();
}

TEST_F(CliGroupsTest, CreateListAndDeleteAGroupWithJson) {
  auto [code, out] = cli({"--json",
                          "groups",
                          "create",
                          "custom",
                          "--pattern",
                          "custom.>",
                          "--ack-wait",
                          "10s",
                          "--max-deliveries",
                          "3",
                          "--max-pending-messages",
                          "100",
                          "--max-pending-bytes",
                          "64KiB",
                          "--overflow",
                          "drop_oldest",
                          "--dead-letter",
                          "$dlq.elsewhere",
                          "--policy",
                          "key_hash",
                          "--dedup-window",
                          "1h"});
  ASSERT_EQ(code, 0) << out;
  auto created = parse_json(out);
  auto settings = created.fields().at("settings").struct_value().fields();
  EXPECT_EQ(created.fields().at("name").string_value(), "custom");
  EXPECT_EQ(settings["pattern"].string_value(), "custom.>");
  EXPECT_EQ(settings["ack_wait_ms"].number_value(), 10000);
  EXPECT_EQ(settings["max_deliveries"].number_value(), 3);
  EXPECT_EQ(settings["max_pending_messages"].number_value(), 100);
  EXPECT_EQ(settings["max_pending_bytes"].number_value(), 65536);
  EXPECT_EQ(settings["overflow"].string_value(), "drop_oldest");
  EXPECT_EQ(settings["dead_letter"].string_value(), "$dlq.elsewhere");
  EXPECT_EQ(settings["dedup_window_ms"].number_value(), 3600000);
  EXPECT_EQ(settings["policy"].string_value(), "key_hash");

  std::tie(code, out) = cli({"pub", "custom.job", "x", "--count", "2"});
  ASSERT_EQ(code, 0) << out;
  std::tie(code, out) = cli({"groups", "ls", "--json"});
  ASSERT_EQ(code, 0) << out;
  auto groups = listed_groups(out);
  ASSERT_EQ(groups.count("custom"), 1u) << out;
  EXPECT_EQ(field(groups["custom"], "counters", "pending"), 2) << out;
  EXPECT_EQ(field(groups["custom"], "settings", "ack_wait_ms"), 10000) << out;
  std::tie(code, out) = cli({"groups", "ls"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("custom"), std::string::npos) << out;
  EXPECT_NE(out.find("PENDING"), std::string::npos) << out;

  std::tie(code, out) = cli({"groups", "purge", "custom", "--json"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(parse_json(out).fields().at("purged_messages").number_value(), 2);
  std::tie(code, out) = cli({"groups", "purge", "custom"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("purged group custom (dropped 0 pending messages"),
            std::string::npos)
      << out;
  std::tie(code, out) = cli({"pub", "custom.job", "x", "--count", "2"});
  ASSERT_EQ(code, 0) << out;

  std::tie(code, out) = cli({"groups", "delete", "custom", "--json"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(parse_json(out).fields().at("dropped_messages").number_value(), 2);
  std::tie(code, out) = cli({"groups", "ls", "--json"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(listed_groups(out).count("custom"), 0u) << out;
  std::tie(code, out) = cli({"groups", "delete", "custom"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("NOT_FOUND"), std::string::npos) << out;
  EXPECT_NE(out.find("custom"), std::string::npos) << out;
}

TEST_F(CliGroupsTest, CreateRefusesBadSettingsNamingThem) {
  for (auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--overflow", "sometimes"},
           {"--ack-wait", "forever"},
           {"--dedup-window", "0s"},
           {"--max-pending-bytes", "1MB"},
           {"--max-deliveries", "-1"}}) {
    auto [code, out] =
        cli({"groups", "create", "g", "--pattern", "g.>", flag, value});
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find(flag), std::string::npos) << out;
  }
  auto [code, out] = cli({"groups", "create", "g"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--pattern"), std::string::npos) << out;
  std::tie(code, out) = cli({"groups", "create", "g", "--pattern", "g.>"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("group g: pattern=g.> ack_wait=30s"), std::string::npos)
      << out;
  std::tie(code, out) = cli({"groups", "create", "g", "--pattern", "other.>"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("FAILED_PRECONDITION"), std::string::npos) << out;
  std::tie(code, out) =
      cli({"groups", "create", "h", "--pattern", "h.>", "--policy", "no_such"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("INVALID_ARGUMENT"), std::string::npos) << out;
  EXPECT_NE(out.find("unknown policy \"no_such\""), std::string::npos) << out;
  EXPECT_NE(out.find("least_loaded"), std::string::npos) << out;
}

TEST_F(CliGroupsTest, TwoWorkersShareTheWorkAndAckIt) {
  auto first = start_sub({"jobs.>", "--group", "workers", "--count", "2"});
  auto second = start_sub({"jobs.>", "--group", "workers", "--count", "2"});
  auto [code, out] = cli({"pub", "jobs.resize", "job {{n}}", "--count", "4"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_EQ(first->wait_exit(patience), 0) << first->output();
  ASSERT_EQ(second->wait_exit(patience), 0) << second->output();
  std::set<std::string> jobs;
  for (auto* worker : {first.get(), second.get()}) {
    auto got = worker->output();
    EXPECT_EQ(lines_starting_with(got, "[#").size(), 2u) << got;
    for (auto& line : lines_starting_with(got, "job "))
      jobs.insert(line);
  }
  EXPECT_EQ(jobs, (std::set<std::string>{"job 1", "job 2", "job 3", "job 4"}));
  std::tie(code, out) = cli({"groups", "ls", "--json"});
  ASSERT_EQ(code, 0) << out;
  auto workers = listed_groups(out)["workers"];
  EXPECT_EQ(field(workers, "counters", "acked"), 4) << out;
  EXPECT_EQ(field(workers, "counters", "pending"), 0) << out;
}

// The README tour: one worker acks, one holds its jobs; killing the holder
// moves its jobs to the other at once.
TEST_F(CliGroupsTest, AKilledWorkersJobsMoveToTheOtherWorker) {
  auto worker = start_sub({"jobs.>", "--group", "workers", "--count", "6"});
  auto holder = start_sub({"jobs.>", "--group", "workers", "--no-ack"});
  auto [code, out] = cli({"pub", "jobs.resize", "job {{n}}", "--count", "6"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_TRUE(wait_for_occurrences(*holder, "attempt 1", 3, patience))
      << holder->output();
  ASSERT_TRUE(wait_for_occurrences(*worker, "attempt 1", 3, patience))
      << worker->output();
  holder->stop(SIGINT);
  ASSERT_EQ(worker->wait_exit(patience), 0) << worker->output();
  auto got = worker->output();
  EXPECT_EQ(occurrences(got, "jobs.resize attempt 2"), 3u) << got;
  std::set<std::string> jobs;
  for (auto& line : lines_starting_with(got, "job "))
    jobs.insert(line);
  EXPECT_EQ(jobs.size(), 6u) << got;
}

TEST_F(CliGroupsTest, NackRedeliversToTheWorker) {
  auto worker =
      start_sub({"retry.>", "--group", "retry", "--nack", "--count", "2"});
  auto [code, out] = cli({"pub", "retry.job", "again"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_EQ(worker->wait_exit(patience), 0) << worker->output();
  auto lines = lines_starting_with(worker->output(), "[#");
  ASSERT_EQ(lines.size(), 2u) << worker->output();
  EXPECT_NE(lines[0].find("retry.job attempt 1"), std::string::npos);
  EXPECT_NE(lines[1].find("retry.job attempt 2"), std::string::npos);
}

TEST_F(CliGroupsTest, NackDelayHoldsBackTheRedelivery) {
  auto worker = start_sub({"later.>", "--group", "later", "--nack",
                           "--nack-delay", "1s", "--count", "2"});
  auto [code, out] = cli({"pub", "later.job", "wait"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_TRUE(wait_for_occurrences(*worker, "attempt 1", 1, patience))
      << worker->output();
  auto first_seen = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_for_occurrences(*worker, "attempt 2", 1, patience))
      << worker->output();
  // The nack left after attempt 1 was printed, so the redelivery cannot
  // come sooner than the delay after it (less the polling slack).
  EXPECT_GE(std::chrono::steady_clock::now() - first_seen,
            std::chrono::milliseconds(800));
  EXPECT_EQ(worker->wait_exit(patience), 0) << worker->output();
}

TEST_F(CliGroupsTest, RejectSendsTheMessageToTheDeadLetterTopic) {
  auto dead_letters = start_sub({"$dlq.>", "--count", "1"});
  auto worker =
      start_sub({"poison.>", "--group", "poison", "--reject", "--count", "1"});
  auto [code, out] = cli({"pub", "poison.job", "cannot be handled"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_EQ(worker->wait_exit(patience), 0) << worker->output();
  ASSERT_EQ(dead_letters->wait_exit(patience), 0) << dead_letters->output();
  auto got = dead_letters->output();
  EXPECT_NE(got.find("$dlq.poison"), std::string::npos) << got;
  EXPECT_NE(got.find("x-tinybroker-reason=rejected"), std::string::npos) << got;
  EXPECT_NE(got.find("x-tinybroker-original-topic=poison.job"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("\ncannot be handled\n"), std::string::npos) << got;
}

TEST_F(CliGroupsTest, BenchRunsTheLoadGeneratorAgainstTheServerGiven) {
  auto [code, out] = cli({"bench", "--scenario", "queue", "--messages", "2000",
                          "--workers", "2", "--json", "--max-seconds", "30"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"received\":2000,\"duplicates\":0"), std::string::npos)
      << out;
}

} // namespace
} // namespace tb::test
