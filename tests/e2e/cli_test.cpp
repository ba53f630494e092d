// End to end: tinybroker-cli pub and sub against a real broker, its errors,
// exit codes and help (groups, workers and bench: cli_groups_test.cpp).

#include <chrono>
#include <csignal>
#include <string>

#include "cli_fixture.hpp"

namespace tb::test {
namespace {

TEST_F(CliTest, PubRepeatsDataWithHeadersAndKeyAndPrintsTheConfirmedIds) {
  auto sub = start_sub({"orders.>", "--count", "3", "--json"});
  auto [code, out] =
      cli({"pub", "orders.eu.created", "order {{n}}", "--count", "3",
           "--header", "trace=abc", "-H", "source=cli", "--key", "user-7"});
  ASSERT_EQ(code, 0) << out;
  auto ids = published_ids(out);
  ASSERT_EQ(ids.size(), 3u) << out;
  EXPECT_LT(ids[0], ids[1]);
  EXPECT_LT(ids[1], ids[2]);
  ASSERT_EQ(sub->wait_exit(patience), 0) << sub->output();
  auto deliveries = lines_starting_with(sub->output(), "{");
  ASSERT_EQ(deliveries.size(), 3u) << sub->output();
  for (std::size_t i = 0; i < deliveries.size(); ++i) {
    auto d = parse_json(deliveries[i]).fields();
    EXPECT_EQ(d["id"].number_value(), static_cast<double>(ids[i]));
    EXPECT_EQ(d["topic"].string_value(), "orders.eu.created");
    EXPECT_EQ(d["payload"].string_value(), "order " + std::to_string(i + 1));
    EXPECT_EQ(d["key"].string_value(), "user-7");
    EXPECT_EQ(d["attempt"].number_value(), 0);
    auto headers = d["headers"].struct_value().fields();
    EXPECT_EQ(headers["trace"].string_value(), "abc");
    EXPECT_EQ(headers["source"].string_value(), "cli");
  }
}

TEST_F(CliTest, PubPublishesEachLineOfStdinInOrder) {
  auto sub = start_sub({"lines.*", "--count", "3"});
  std::string input = "first\nsecond\nthird";
  auto [code, out] = cli({"pub", "lines.x"}, &input);
  ASSERT_EQ(code, 0) << out;
  auto ids = published_ids(out);
  ASSERT_EQ(ids.size(), 3u) << out;
  ASSERT_EQ(sub->wait_exit(patience), 0) << sub->output();
  auto got = sub->output();
  auto expect_at = [&](std::size_t id, const std::string& line) {
    auto text = "[#" + std::to_string(id) + "] lines.x\n" + line + "\n";
    auto pos = got.find(text);
    EXPECT_NE(pos, std::string::npos) << text << " not in:\n" << got;
    return pos;
  };
  auto first = expect_at(ids[0], "first");
  auto second = expect_at(ids[1], "second");
  auto third = expect_at(ids[2], "third");
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
}

TEST_F(CliTest, PubSendsAFileAsOnePayloadAndReportsJson) {
  std::string content = "line one\nline two\n\t\"quoted\" end";
  auto path = write_temp_file(content, ".txt");
  auto sub = start_sub({"files.>", "--count", "1", "--json"});
  auto [code, out] = cli({"--json", "pub", "files.text", "--file", path});
  ASSERT_EQ(code, 0) << out;
  auto result = parse_json(lines_starting_with(out, "{").at(0)).fields();
  EXPECT_EQ(result["topic"].string_value(), "files.text");
  EXPECT_GT(result["id"].number_value(), 0);
  ASSERT_EQ(sub->wait_exit(patience), 0) << sub->output();
  auto d = parse_json(lines_starting_with(sub->output(), "{").at(0)).fields();
  EXPECT_EQ(d["payload"].string_value(), content);
  EXPECT_EQ(d["id"].number_value(), result["id"].number_value());
}

TEST_F(CliTest, SubPrintsAPayloadThatIsNotUtf8AsBase64InJson) {
  auto path = write_temp_file(std::string{"\xff\x00\x61", 3}, ".bin");
  auto sub = start_sub({"--json", "bin.>", "--count", "1"});
  auto [code, out] = cli({"pub", "bin.blob", "--file", path});
  ASSERT_EQ(code, 0) << out;
  ASSERT_EQ(sub->wait_exit(patience), 0) << sub->output();
  auto d = parse_json(lines_starting_with(sub->output(), "{").at(0)).fields();
  EXPECT_EQ(d["payload_base64"].string_value(), "/wBh");
  EXPECT_EQ(d.count("payload"), 0u);
}

TEST_F(CliTest, PubNamesARefusedTopicAndExitsOne) {
  auto [code, out] = cli({"pub", "bad..topic", "x"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("bad..topic"), std::string::npos) << out;
  EXPECT_NE(out.find("INVALID_ARGUMENT"), std::string::npos) << out;
  std::tie(code, out) = cli({"pub", "$dlq.mine", "x"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("PERMISSION_DENIED"), std::string::npos) << out;
}

TEST_F(CliTest, SubNamesARefusedPatternAndExitsOne) {
  auto [code, out] = cli({"sub", "orders.>.created"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("orders.>.created"), std::string::npos) << out;
  EXPECT_NE(out.find("refused"), std::string::npos) << out;
}

TEST_F(CliTest, AnUnreachableBrokerExitsThreeWithinTheTimeout) {
  closed_port nobody;
  auto server = nobody.address();
  for (auto args : std::vector<std::vector<std::string>>{
           {"pub", "a.b", "x"}, {"sub", "a.>"}, {"groups", "ls"}}) {
    args.insert(args.begin(), {"--server", server, "--timeout", "500ms"});
    auto start = std::chrono::steady_clock::now();
    auto [code, out] = run_command(cli_binary(), args);
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(code, 3) << out;
    EXPECT_NE(out.find("cannot connect to the broker at " + server),
              std::string::npos)
        << out;
    EXPECT_LT(took, std::chrono::seconds(5)) << args[4];
  }
}

TEST_F(CliTest, UsageErrorsExitTwoAndNameTheProblem) {
  struct usage_case {
    std::vector<std::string> args;
    std::string named;
  };
  for (auto& c : std::vector<usage_case>{
           {{"sub", "jobs.>", "--ack"}, "--group"},
           {{"sub", "jobs.>", "--group", "g", "--ack", "--reject"}, "--ack"},
           {{"pub"}, "TOPIC"},
           {{"pub", "a.b", "x", "--header", "novalue"}, "--header"},
           {{"pub", "a.b", "x", "--file", "/nonexistent"}, "--file"},
           {{"--timeout", "soon", "pub", "a.b", "x"}, "--timeout"},
           {{"--server", "nonsense", "pub", "a.b", "x"}, "--server"},
           {{"frobnicate"}, "frobnicate"},
           {{"groups", "frob"}, "frob"},
           {{"groups"}, "ls, "},
           {{}, "a command is needed"}}) {
    auto [code, out] = cli(c.args);
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find(c.named), std::string::npos) << c.named << ":\n" << out;
  }
}

// Issue 15: a name that is not UTF-8 cannot be sent (the broker would end
// the stream); the CLI says which one and where, before connecting.
TEST_F(CliTest, NamesThatAreNotUtf8AreUsageErrorsAndNothingIsSent) {
  struct bad_name {
    std::vector<std::string> args;
    std::string message;
  };
  for (auto& c : std::vector<bad_name>{
           {{"sub", "x.\xff"},
            "tinybroker-cli: pattern \"x.\\xff\" is not UTF-8 (at byte "
            "offset 2: 0xff)"},
           {{"pub", "x.\xff", "hi"},
            "tinybroker-cli: topic \"x.\\xff\" is not UTF-8 (at byte "
            "offset 2: 0xff)"},
           {{"pub", "orders.\xc3\xa9t\xc3", "hi"}, "(at byte offset 10: 0xc3)"},
           {{"pub", "a.b", "hi", "--key", "k\xed\xa0\x80"}, "--key"},
           {{"pub", "a.b", "hi", "-H", "trace=\xc0\xaf"}, "--header"},
           {{"sub", "a.>", "--group", "g\xff"}, "--group"},
           {{"groups", "create", "g\xfe", "--pattern", "a.>"}, "group name"},
           {{"groups", "delete", "g\xfe"}, "group name"}}) {
    auto [code, out] = cli(c.args);
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find(c.message), std::string::npos)
        << c.message << " not in:\n"
        << out;
  }
  // Nothing reached the broker: no stream, no frame it could not parse.
  auto log = broker_->output();
  EXPECT_EQ(log.find("session opened"), std::string::npos) << log;
  EXPECT_EQ(log.find("malformed"), std::string::npos) << log;
}

TEST_F(CliTest, HelpOfEveryCommandExitsZeroWithAnExample) {
  for (auto& args :
       std::vector<std::vector<std::string>>{{"--help"},
                                             {"pub", "--help"},
                                             {"sub", "--help"},
                                             {"groups", "--help"},
                                             {"groups", "ls", "--help"},
                                             {"groups", "create", "--help"},
                                             {"groups", "delete", "--help"},
                                             {"stats", "--help"},
                                             {"bench", "--help"}}) {
    auto [code, out] = run_command(cli_binary(), args);
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("Example"), std::string::npos) << out;
    EXPECT_NE(out.find("tinybroker-cli"), std::string::npos) << out;
  }
}

TEST_F(CliTest, SubSaysOnStderrWhenTheBrokerEndsItsSubscription) {
  auto sub = start_sub({"doomed.>", "--group", "doomed"});
  auto [code, out] = cli({"groups", "delete", "doomed"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(sub->wait_exit(patience), 1) << sub->output();
  EXPECT_NE(sub->output().find("subscription ended by the broker"),
            std::string::npos)
      << sub->output();
}

TEST_F(CliTest, SubExitsThreeWhenTheBrokerStops) {
  auto sub = start_sub({"orders.>"});
  ASSERT_EQ(broker_->stop(SIGTERM), 0) << broker_->output();
  EXPECT_EQ(sub->wait_exit(patience), 3) << sub->output();
  EXPECT_NE(sub->output().find("connection lost: UNAVAILABLE"),
            std::string::npos)
      << sub->output();
}

// A broker whose fan-out subscriptions buffer a single message, so that a
// burst published in one batch overflows a subscriber at once.
class CliTinyBufferTest : public CliTest {
protected:
  std::vector<std::string> broker_args() override {
    return {"--config",
            write_temp_file("[limits]\nsubscription_buffer = 1\n", ".toml")};
  }
};

TEST_F(CliTinyBufferTest, SubReportsLostMessagesOnStderrAndGoesOn) {
  auto sub = start_sub({"burst.>", "--count", "1"});
  auto [code, out] = cli({"pub", "burst.x", "m{{n}}", "--count", "100"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_EQ(sub->wait_exit(patience), 0) << sub->output();
  auto got = sub->output();
  EXPECT_NE(got.find("lost 99 messages (99 in total)"), std::string::npos)
      << got;
  EXPECT_NE(got.find("burst.x\nm100\n"), std::string::npos) << got;
}

// A broker that takes messages of 1 KiB at most.
class CliSmallLimitTest : public CliTest {
protected:
  std::vector<std::string> broker_args() override {
    return {
        "--config",
        write_temp_file("[limits]\nmax_message_bytes = \"1KiB\"\n", ".toml")};
  }
};

// Issue 26, point 3: pub reads the broker's limits.max_message_bytes (Info)
// and refuses a larger message before sending it, with one line naming its
// size and the limit (exit 1, a refusal); the other messages still go.
TEST_F(CliSmallLimitTest, PubRefusesAMessageOverTheLimitBeforeSending) {
  auto path = write_temp_file(std::string(2000, 'x'), ".bin");
  auto [code, out] = cli({"pub", "big.file", "--file", path});
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(out, "tinybroker-cli: message to big.file refused: "
                 "RESOURCE_EXHAUSTED (message_too_large): message to "
                 "\"big.file\" has 2000 bytes (payload, headers and key); "
                 "the broker at " +
                     broker_->address() +
                     " takes at most 1024 (limits.max_message_bytes); "
                     "nothing was sent\n");
  std::string input = "small\n" + std::string(1500, 'y') + "\nlast\n";
  std::tie(code, out) = cli({"pub", "big.lines"}, &input);
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(published_ids(out).size(), 2u) << out;
  EXPECT_EQ(occurrences(out, "1500 bytes"), 1u) << out;
  // Nothing over the limit reached the broker: it refused nothing.
  std::tie(code, out) = cli({"--json", "stats"});
  ASSERT_EQ(code, 0) << out;
  auto broker = parse_json(out).fields().at("broker").struct_value().fields();
  EXPECT_EQ(broker["refused"].number_value(), 0) << out;
  EXPECT_EQ(broker["published"].number_value(), 2) << out;
}

} // namespace
} // namespace tb::test
