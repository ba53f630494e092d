// End to end: tinybroker-cli stats (tables, --json, filters, --watch) and
// the counters of groups ls, against a real broker.

#include <chrono>
#include <csignal>
#include <sstream>
#include <string>
#include <vector>

#include "cli_fixture.hpp"

namespace tb::test {
namespace {

using CliStatsTest = CliTest;
using google::protobuf::Struct;
using google::protobuf::Value;

// Returns member `name` of `object`; fails the test if it is missing.
const Value& at(const Struct& object, const std::string& name) {
  static const Value missing;
  auto found = object.fields().find(name);
  EXPECT_NE(found, object.fields().end()) << "no member " << name;
  return found == object.fields().end() ? missing : found->second;
}

// Returns the JSON object on the last line of `out` that starts with "{".
Struct last_json(const std::string& out) {
  auto lines = lines_starting_with(out, "{");
  EXPECT_FALSE(lines.empty()) << out;
  return lines.empty() ? Struct{} : parse_json(lines.back());
}

// Returns the group named `name` of a Stats or ListGroups JSON object.
Struct group_named(const Struct& reply, const std::string& name) {
  for (auto& g : at(reply, "groups").list_value().values())
    if (at(g.struct_value(), "name").string_value() == name)
      return g.struct_value();
  ADD_FAILURE() << "no group " << name;
  return {};
}

// Returns counter `name` of a group object.
double counter(const Struct& group, const std::string& name) {
  return at(at(group, "counters").struct_value(), name).number_value();
}

// Returns the words of the table row of `out` whose first word is `name`.
std::vector<std::string> row_of(const std::string& out,
                                const std::string& name) {
  for (auto& line : lines_starting_with(out, name + " ")) {
    std::istringstream in{line};
    std::vector<std::string> words;
    for (std::string word; in >> word;)
      words.push_back(word);
    return words;
  }
  ADD_FAILURE() << "no row " << name << " in:\n" << out;
  return {};
}

TEST_F(CliStatsTest, TableShowsTheTotalsAndTheGroupsCounters) {
  auto [code, out] = cli({"groups", "create", "work", "--pattern", "work.>"});
  ASSERT_EQ(code, 0) << out;
  std::tie(code, out) = cli({"pub", "work.job", "j{{n}}", "--count", "5"});
  ASSERT_EQ(code, 0) << out;
  std::tie(code, out) = cli({"pub", "nobody.listens", "x", "--count", "2"});
  ASSERT_EQ(code, 0) << out;
  std::tie(code, out) = cli({"stats"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("tinybroker "), std::string::npos) << out;
  EXPECT_NE(out.find("published 7, unrouted 2,"), std::string::npos) << out;
  EXPECT_NE(out.find("groups 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("OLDEST_PENDING"), std::string::npos) << out;
  auto row = row_of(out, "work");
  ASSERT_GE(row.size(), 7u) << out;
  EXPECT_EQ(row[1], "work.>");
  EXPECT_EQ(row[3], "5") << "PENDING:\n" << out;
  EXPECT_EQ(row[6], "5") << "RECEIVED:\n" << out;
  EXPECT_NE(row[5], "-") << "OLDEST_PENDING:\n" << out;
}

TEST_F(CliStatsTest, JsonHoldsTheCountersAfterPublishing) {
  auto [code, out] = cli({"groups", "create", "work", "--pattern", "work.>"});
  ASSERT_EQ(code, 0) << out;
  std::tie(code, out) = cli({"pub", "work.job", "j{{n}}", "--count", "5"});
  ASSERT_EQ(code, 0) << out;
  std::tie(code, out) = cli({"stats", "--json"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(lines_starting_with(out, "{").size(), 1u) << out;
  auto reply = last_json(out);
  auto broker = at(reply, "broker").struct_value();
  EXPECT_EQ(at(broker, "published").number_value(), 5) << out;
  EXPECT_EQ(at(broker, "groups").number_value(), 1) << out;
  EXPECT_FALSE(at(broker, "version").string_value().empty()) << out;
  EXPECT_GT(at(broker, "rss_bytes").number_value(), 0) << out;
  EXPECT_EQ(at(reply, "groups_matched").number_value(), 1) << out;
  auto work = group_named(reply, "work");
  EXPECT_EQ(counter(work, "pending"), 5) << out;
  EXPECT_EQ(counter(work, "received"), 5) << out;
  EXPECT_EQ(at(work, "members").list_value().values_size(), 0) << out;
  // No --topics: the broker lists no topic.
  EXPECT_EQ(at(reply, "topics").list_value().values_size(), 0) << out;
}

TEST_F(CliStatsTest, MembersShowWhatEachMemberHolds) {
  auto holder = start_sub({"jobs.>", "--group", "workers", "--no-ack"});
  auto [code, out] = cli({"pub", "jobs.resize", "job {{n}}", "--count", "3"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_TRUE(wait_for_occurrences(*holder, "attempt 1", 3, patience))
      << holder->output();
  std::tie(code, out) = cli({"stats", "--members"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("OLDEST_IN_FLIGHT"), std::string::npos) << out;
  EXPECT_NE(out.find("delivered 3,"), std::string::npos) << out;
  EXPECT_NE(out.find("latency   p50 "), std::string::npos) << out;
  EXPECT_NE(out.find(" over 3 deliveries\n"), std::string::npos) << out;
  // Two rows start with the group's name: its counters, then its member
  // (GROUP, NAME, PEER, SUBSCRIPTION, IN_FLIGHT, ...).
  auto rows = lines_starting_with(out, "workers ");
  ASSERT_EQ(rows.size(), 2u) << out;
  std::istringstream member{rows[1]};
  std::string group, name, peer, subscription, in_flight;
  member >> group >> name >> peer >> subscription >> in_flight;
  EXPECT_EQ(name, "tinybroker-cli") << out;
  EXPECT_EQ(subscription, "1") << out;
  EXPECT_EQ(in_flight, "3") << out;
  EXPECT_NE(rows[1].find("active"), std::string::npos) << out;
  std::tie(code, out) = cli({"stats", "--json"});
  ASSERT_EQ(code, 0) << out;
  auto workers = group_named(last_json(out), "workers");
  EXPECT_EQ(counter(workers, "in_flight"), 3) << out;
  EXPECT_EQ(counter(workers, "members"), 1) << out;
  auto& members = at(workers, "members").list_value();
  ASSERT_EQ(members.values_size(), 1) << out;
  auto& m = members.values(0).struct_value();
  EXPECT_EQ(at(m, "in_flight").number_value(), 3) << out;
  EXPECT_NE(at(m, "peer").string_value(), "") << out;
  EXPECT_TRUE(at(m, "active").bool_value()) << out;
}

TEST_F(CliStatsTest, FiltersAndLimitNarrowTheLists) {
  for (auto name : {"work-a", "work-b", "other"}) {
    auto [code, out] =
        cli({"groups", "create", name, "--pattern", std::string{name} + ".>"});
    ASSERT_EQ(code, 0) << out;
  }
  auto [code, out] = cli({"stats", "--groups", "work", "--limit", "1"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("(showing 1 of 2 groups; see --limit)"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("other"), std::string::npos) << out;
  std::tie(code, out) = cli({"stats", "--json", "--groups", "work"});
  ASSERT_EQ(code, 0) << out;
  auto reply = last_json(out);
  EXPECT_EQ(at(reply, "groups_matched").number_value(), 2) << out;
  EXPECT_EQ(at(reply, "groups").list_value().values_size(), 2) << out;
  EXPECT_EQ(at(at(reply, "broker").struct_value(), "groups").number_value(), 3)
      << out;
  std::tie(code, out) = cli({"stats", "--sessions", "no-such-peer"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("no sessions"), std::string::npos) << out;
  std::tie(code, out) = cli({"stats", "--topics", "--actors"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("MAILBOX"), std::string::npos) << out;
  EXPECT_NE(out.find("router"), std::string::npos) << out;
}

TEST_F(CliStatsTest, WatchPrintsOneBlockPerRefreshWithRates) {
  auto start = std::chrono::steady_clock::now();
  auto [code, out] =
      cli({"stats", "--watch", "--count", "2", "--interval", "300ms"});
  ASSERT_EQ(code, 0) << out;
  // The second refresh waits for the interval; after the last, it exits.
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, patience);
  EXPECT_EQ(lines_starting_with(out, "tinybroker ").size(), 2u) << out;
  EXPECT_EQ(occurrences(out, "\n\n"), 1u) << out; // one blank line between
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out; // not a terminal
  auto rates = lines_starting_with(out, "rates ");
  ASSERT_EQ(rates.size(), 2u) << out;
  EXPECT_NE(rates[0].find("published/s -"), std::string::npos) << out;
  EXPECT_NE(rates[1].find("published/s 0"), std::string::npos) << out;
  std::tie(code, out) = cli(
      {"stats", "--watch", "--count", "2", "--interval", "100ms", "--json"});
  ASSERT_EQ(code, 0) << out;
  auto objects = lines_starting_with(out, "{");
  ASSERT_EQ(objects.size(), 2u) << out;
  for (auto& line : objects)
    EXPECT_TRUE(parse_json(line).fields().count("broker")) << line;
}

TEST_F(CliStatsTest, WatchExitsZeroOnCtrlC) {
  auto watch = std::make_unique<child_process>(
      cli_binary(), at_broker({"stats", "--watch", "--interval", "100ms"}));
  ASSERT_TRUE(watch->wait_for_occurrences("tinybroker ", 2, patience))
      << watch->output();
  EXPECT_EQ(watch->stop(SIGINT), 0) << watch->output();
}

TEST_F(CliStatsTest, WatchExitsThreeWhenTheBrokerGoesAway) {
  auto watch = std::make_unique<child_process>(
      cli_binary(), at_broker({"stats", "--watch", "--interval", "100ms"}));
  ASSERT_TRUE(watch->wait_for_output("tinybroker ", patience))
      << watch->output();
  ASSERT_EQ(broker_->stop(SIGTERM), 0) << broker_->output();
  EXPECT_EQ(watch->wait_exit(patience), 3) << watch->output();
  EXPECT_NE(watch->output().find("tinybroker-cli: Stats failed: UNAVAILABLE"),
            std::string::npos)
      << watch->output();
}

TEST_F(CliStatsTest, BadFlagsExitTwoAndNameTheProblem) {
  struct usage_case {
    std::vector<std::string> args;
    std::string named;
  };
  for (auto& c : std::vector<usage_case>{
           {{"stats", "--interval", "1s"}, "--watch"},
           {{"stats", "--count", "2"}, "--watch"},
           {{"stats", "--watch", "--interval", "soon"}, "--interval"},
           {{"stats", "--watch", "--interval", "10ms"}, "at least 100ms"},
           {{"stats", "--watch", "--count", "0"}, "--count"},
           {{"stats", "--limit", "0"}, "--limit"},
           {{"stats", "--frobnicate"}, "--frobnicate"}}) {
    auto [code, out] = cli(c.args);
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find(c.named), std::string::npos) << c.named << ":\n" << out;
  }
}

TEST_F(CliStatsTest, NothingListeningExitsThreeWithinTheTimeout) {
  closed_port nobody;
  auto server = nobody.address();
  for (auto args : std::vector<std::vector<std::string>>{
           {"stats"}, {"stats", "--watch"}, {"stats", "--json"}}) {
    args.insert(args.begin(), {"--server", server, "--timeout", "500ms"});
    auto [code, out] = run_command(cli_binary(), args);
    EXPECT_EQ(code, 3) << out;
    EXPECT_NE(out.find("cannot connect to the broker at " + server),
              std::string::npos)
        << out;
  }
}

TEST_F(CliStatsTest, GroupsLsShowsTheSameCounters) {
  auto holder = start_sub({"jobs.>", "--group", "workers", "--no-ack"});
  auto [code, out] = cli({"pub", "jobs.resize", "job {{n}}", "--count", "2"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_TRUE(wait_for_occurrences(*holder, "attempt 1", 2, patience))
      << holder->output();
  std::tie(code, out) =
      cli({"groups", "create", "backlog", "--pattern", "backlog.>"});
  ASSERT_EQ(code, 0) << out;
  std::tie(code, out) = cli({"pub", "backlog.x", "x", "--count", "3"});
  ASSERT_EQ(code, 0) << out;
  std::tie(code, out) = cli({"groups", "ls"});
  ASSERT_EQ(code, 0) << out;
  for (auto* column : {"OLDEST_PENDING", "RECEIVED", "RECV/S", "ACK/S"})
    EXPECT_NE(out.find(column), std::string::npos) << column << '\n' << out;
  auto row = row_of(out, "workers");
  ASSERT_GE(row.size(), 7u) << out;
  EXPECT_EQ(row[2], "1") << "MEMBERS:\n" << out;
  EXPECT_EQ(row[4], "2") << "IN_FLIGHT:\n" << out;
  EXPECT_EQ(row[5], "-") << "OLDEST_PENDING (none waits):\n" << out;
  EXPECT_EQ(row[6], "2") << "RECEIVED:\n" << out;
  row = row_of(out, "backlog");
  ASSERT_GE(row.size(), 7u) << out;
  EXPECT_EQ(row[3], "3") << "PENDING:\n" << out;
  EXPECT_NE(row[5], "-") << "OLDEST_PENDING:\n" << out;
  std::tie(code, out) = cli({"groups", "ls", "--json"});
  ASSERT_EQ(code, 0) << out;
  auto reply = last_json(out);
  auto workers = group_named(reply, "workers");
  EXPECT_EQ(counter(workers, "received"), 2) << out;
  EXPECT_EQ(counter(workers, "in_flight"), 2) << out;
  EXPECT_EQ(counter(workers, "oldest_pending_age_ms"), 0) << out;
  auto backlog = group_named(reply, "backlog");
  EXPECT_GT(counter(backlog, "oldest_pending_age_ms"), 0) << out;
  EXPECT_GT(counter(backlog, "held_bytes"), 0) << out;
  // The 10s rate counts full seconds only: it shows the messages once the
  // second they came in has passed. Polls: the broker is another process.
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (counter(group_named(reply, "backlog"), "received_per_second_10s") ==
             0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::tie(code, out) = cli({"groups", "ls", "--json"});
    ASSERT_EQ(code, 0) << out;
    reply = last_json(out);
  }
  // 3 messages over 10 seconds, once their second is over.
  auto rate = counter(group_named(reply, "backlog"), "received_per_second_10s");
  EXPECT_GT(rate, 0) << out;
  EXPECT_LE(rate, 0.3 + 1e-9) << out;
}

} // namespace
} // namespace tb::test
