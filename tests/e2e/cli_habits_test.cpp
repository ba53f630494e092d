// End to end: what every program shares on the command line (docs/cli.md):
// --version, TINYBROKER_SERVER, failing at once when nothing listens, JSON
// errors, durations with units, --help of the examples; and tinybroker-cli
// health and info.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "cli_fixture.hpp"

namespace tb::test {
namespace {

// Returns the path of tool `name` (tinybroker-cli, -bench, -soak).
std::string tool(const std::string& name) {
  return std::string{TINYBROKER_TOOLS_DIR} + "/" + name;
}

// Returns the path of example `name`.
std::string example(const std::string& name) {
  return std::string{TINYBROKER_EXAMPLES_DIR} + "/" + name;
}

// Runs `binary` with `args` and TINYBROKER_SERVER set to `server` (unset
// when empty); returns its exit code and output.
std::pair<int, std::string> run_at(const std::string& server,
                                   const std::string& binary,
                                   const std::vector<std::string>& args) {
  std::vector<std::string> argv{"-u", "TINYBROKER_SERVER"};
  if (!server.empty())
    argv.push_back("TINYBROKER_SERVER=" + server);
  argv.push_back(binary);
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command("/usr/bin/env", argv);
}

// Returns the last non-empty line of `out`.
std::string last_line(const std::string& out) {
  auto end = out.find_last_not_of('\n');
  if (end == std::string::npos)
    return {};
  auto begin = out.rfind('\n', end);
  return out.substr(begin == std::string::npos ? 0 : begin + 1,
                    end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

TEST(CliHabitsTest, EveryProgramPrintsItsNameAndVersion) {
  std::vector<std::pair<std::string, std::string>> programs{
      {"tinybroker", TINYBROKER_BINARY},
      {"tinybroker-cli", tool("tinybroker-cli")},
      {"tinybroker-bench", tool("tinybroker-bench")},
      {"tinybroker-soak", tool("tinybroker-soak")},
      {"tinybroker-relay", tool("tinybroker-relay")},
      {"publish_subscribe", example("publish_subscribe")},
      {"work_queue", example("work_queue")},
      {"dead_letters", example("dead_letters")},
      {"priority_broker", example("priority_broker")}};
  for (auto& [name, path] : programs) {
    auto [code, out] = run_command(path, {"--version"});
    EXPECT_EQ(code, 0) << name << ": " << out;
    EXPECT_EQ(out, name + " " + TINYBROKER_PROJECT_VERSION + "\n") << name;
  }
}

TEST(CliHabitsTest, ExamplesAnswerHelpWithTheirUsageAndExitZero) {
  for (auto* name : {"publish_subscribe", "work_queue", "dead_letters"}) {
    for (auto* flag : {"--help", "-h"}) {
      auto [code, out] = run_command(example(name), {flag});
      EXPECT_EQ(code, 0) << name << " " << flag << ": " << out;
      EXPECT_EQ(out.rfind(std::string{"usage: "} + name, 0), 0u) << out;
      EXPECT_NE(out.find("TINYBROKER_SERVER"), std::string::npos) << out;
    }
    auto [code, out] = run_command(example(name), {"frobnicate", "x", "y"});
    EXPECT_EQ(code, 2) << name << ": " << out;
  }
}

// Every client fails within a second, naming the address, against a port
// nothing listens on, although it would wait 5 s (bench), 10 s (examples,
// the CLI's --timeout here) for a broker that is slow to answer.
TEST(CliHabitsTest, NothingListeningFailsWithinASecondNamingTheAddress) {
  closed_port nobody;
  auto server = nobody.address();
  struct client_run {
    std::string binary;
    std::vector<std::string> args;
    int code;
  };
  std::vector<client_run> runs{
      {tool("tinybroker-bench"), {"--scenario", "s1", "--messages", "10"}, 2},
      {example("publish_subscribe"), {"pub", "a.b", "x"}, 3},
      {example("publish_subscribe"), {"sub", "a.>"}, 3},
      {example("work_queue"), {"publish", "1"}, 3},
      {example("dead_letters"), {}, 3}};
  for (auto* command :
       {"pub a.b x", "sub a.>", "groups ls", "stats", "health", "info"}) {
    std::vector<std::string> args{"--timeout", "10s"};
    std::istringstream words{command};
    for (std::string word; words >> word;)
      args.push_back(word);
    runs.push_back({tool("tinybroker-cli"), args, 3});
  }
  for (auto& run : runs) {
    auto start = std::chrono::steady_clock::now();
    auto [code, out] = run_at(server, run.binary, run.args);
    auto took = std::chrono::steady_clock::now() - start;
    auto what = run.binary + " " + (run.args.empty() ? "" : run.args[0]);
    EXPECT_EQ(code, run.code) << what << ": " << out;
    EXPECT_NE(out.find("cannot connect to the broker at " + server),
              std::string::npos)
        << what << ": " << out;
    EXPECT_LT(took, std::chrono::milliseconds(1500)) << what;
  }
}

// Failing at once is only for a failed connection: a peer that accepts and
// is slow to answer is waited for, up to --timeout.
TEST(CliHabitsTest, AReachableButSlowBrokerIsWaitedForUpToTheTimeout) {
  silent_listener slow;
  auto start = std::chrono::steady_clock::now();
  auto [code, out] =
      run_command(tool("tinybroker-cli"),
                  {"--server", slow.address(), "--timeout", "600ms", "health"});
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(code, 3) << out;
  EXPECT_NE(out.find("cannot connect to the broker at " + slow.address() +
                     " within 600ms"),
            std::string::npos)
      << out;
  EXPECT_GE(took, std::chrono::milliseconds(550));
}

// With --json, a failure is one JSON object (on standard error) naming the
// gRPC status; the exit codes stay those of the text mode. A duration
// without a unit is refused, 0 excepted.
TEST(CliHabitsTest, JsonErrorsAndDurationsWithoutAUnit) {
  closed_port nobody;
  struct json_case {
    std::string binary;
    std::vector<std::string> args;
    int code;
    std::string status;
    std::string message;
  };
  auto cli = tool("tinybroker-cli");
  auto bench = tool("tinybroker-bench");
  for (auto& c : std::vector<json_case>{
           {cli, {"--json", "health"}, 3, "UNAVAILABLE", nobody.address()},
           {cli,
            {"--json", "--timeout", "5", "health"},
            2,
            "INVALID_ARGUMENT",
            "--timeout: \"5\" has no unit; add one: 5ms, 5s"},
           {cli, {"frobnicate", "--json"}, 2, "INVALID_ARGUMENT", "frobnicate"},
           {bench, {"--json"}, 2, "UNAVAILABLE", nobody.address()},
           {bench,
            {"--json", "--messages", "0"},
            2,
            "INVALID_ARGUMENT",
            "--messages"}}) {
    auto [code, out] = run_at(nobody.address(), c.binary, c.args);
    EXPECT_EQ(code, c.code) << out;
    auto top = parse_json(last_line(out)).fields();
    auto fields = top["error"].struct_value().fields();
    EXPECT_EQ(fields["code"].string_value(), c.status) << out;
    EXPECT_NE(fields["message"].string_value().find(c.message),
              std::string::npos)
        << out;
  }
  auto [code, out] = run_command(cli, {"--timeout", "1500", "health"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_EQ(out.rfind("tinybroker-cli: --timeout: \"1500\" has no unit", 0), 0u)
      << out;
  std::tie(code, out) =
      run_command(cli, {"sub", "a.>", "--group", "g", "--nack", "--nack-delay",
                        "0", "--server", nobody.address(), "--timeout", "1s"});
  EXPECT_EQ(code, 3) << "0 needs no unit: " << out;
  std::tie(code, out) = run_command(tool("tinybroker-soak"),
                                    {"--duration", "90", "--work-dir", "/tmp"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("with a unit"), std::string::npos) << out;
}

TEST_F(CliTest, HealthAndInfoDescribeTheBrokerFoundThroughTheVariable) {
  auto address = broker_->address();
  auto cli = tool("tinybroker-cli");
  auto [code, out] = run_at(address, cli, {"health"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "SERVING\n");
  std::tie(code, out) =
      run_at(address, cli, {"health", "--service", "no.such.Service"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("NOT_FOUND"), std::string::npos) << out;
  std::tie(code, out) = run_at(address, cli, {"--json", "info"});
  ASSERT_EQ(code, 0) << out;
  auto info = parse_json(out).fields();
  EXPECT_EQ(info["version"].string_value(), TINYBROKER_PROJECT_VERSION);
  EXPECT_EQ(info["listen"].string_value(), address);
  EXPECT_EQ(info["metrics_listen"].string_value(), "");
  EXPECT_GE(info["uptime_ms"].number_value(), 0);
  auto limits = info["limits"].struct_value().fields();
  EXPECT_EQ(limits["max_message_bytes"].number_value(), 1 << 20);
  EXPECT_EQ(limits["max_topics"].number_value(), 1'000'000);
  EXPECT_EQ(limits["max_sessions"].number_value(), 10'000);
  EXPECT_FALSE(info["auth_enabled"].bool_value());
  EXPECT_FALSE(info["tls_enabled"].bool_value());
  std::tie(code, out) = run_at(address, cli, {"info"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.rfind(std::string{"tinybroker "} + TINYBROKER_PROJECT_VERSION +
                          " at " + address + ", up ",
                      0),
            0u)
      << out;
  EXPECT_NE(out.find("max_message_bytes 1MiB"), std::string::npos) << out;
  EXPECT_NE(out.find("auth off, tls off"), std::string::npos) << out;
  // --server beats the variable; the bench and the examples read it too.
  closed_port nobody;
  std::tie(code, out) =
      run_at(nobody.address(), cli, {"--server", address, "health"});
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) =
      run_at(address, tool("tinybroker-bench"),
             {"--scenario", "s1", "--messages", "200", "--json"});
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) =
      run_at(address, example("publish_subscribe"), {"pub", "a.b", "hi"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("published #"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
