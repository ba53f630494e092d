// End to end: what a real broker process writes to standard error (issue
// 11): a line per session opened and closed with its counts, refusals with
// their reason, groups created and deleted, a slow consumer's losses, dead
// letters, the periodic summary, `--log-level` and `--log-format json`.

#include <csignal>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_fixture.hpp"
#include "raw_client.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;
using kind = pb::ServerFrame::KindCase;

// Returns the lines of `text` that contain every one of `parts`.
std::vector<std::string> lines_with(const std::string& text,
                                    std::initializer_list<std::string> parts) {
  std::vector<std::string> result;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (auto& part : parts)
      all = all && line.find(part) != std::string::npos;
    if (all)
      result.push_back(line);
  }
  return result;
}

// Returns the value of `name=` in a text log line, up to the next space.
std::string field_of(const std::string& line, const std::string& name) {
  auto at = line.find(" " + name + "=");
  if (at == std::string::npos)
    return {};
  at += name.size() + 2;
  return line.substr(at, line.find(' ', at) - at);
}

/// A broker with small limits, so that tests reach them quickly.
class LoggingTest : public BrokerTest {
protected:
  std::vector<std::string> broker_args() override {
    return {"--config", write_temp_file(R"(
[limits]
max_subscriptions_per_session = 2
subscription_buffer = 100
)",
                                        ".toml")};
  }

  /// Stops the broker (as TearDown would) and returns everything it wrote.
  std::string stop_and_read() {
    conn_.reset();
    EXPECT_EQ(broker_->stop(SIGTERM), 0);
    return broker_->output();
  }
};

TEST_F(LoggingTest, EachSessionIsLoggedWhenItOpensAndWhenItEndsWithItsCounts) {
  auto sub = subscriber(1, "log.>");
  // Its own connection: a peer names a connection, not a stream.
  auto stub = pb::Broker::NewStub(raw_channel(broker_->address(), true));
  auto pub = std::make_unique<client::session>(*stub);
  ASSERT_TRUE(
      pub->publish({{"log.a", "1", {}, {}}, {"log.b", "2", {}, {}}}, true, 7));
  ASSERT_TRUE(pub->wait_for(kind::kPublishConfirm, patience).has_value());
  EXPECT_EQ(sub->receive(2, patience).size(), 2u);
  EXPECT_TRUE(pub->close().ok());
  EXPECT_TRUE(sub->close().ok());
  ASSERT_TRUE(broker_->wait_for_occurrences("session closed", 2, patience))
      << broker_->output();
  auto out = broker_->output();
  auto opened = lines_with(out, {"INFO  session opened peer=ipv4:127.0.0.1:"});
  ASSERT_EQ(opened.size(), 2u) << out;
  auto closed = lines_with(out, {"INFO  session closed peer=ipv4:127.0.0.1:",
                                 "ended=client_closed", "duration_ms="});
  ASSERT_EQ(closed.size(), 2u) << out;
  // The publisher's line and the subscriber's, each under its own peer.
  auto pub_line = lines_with(out, {"session closed", "published=2"});
  auto sub_line = lines_with(out, {"session closed", "delivered=2"});
  ASSERT_EQ(pub_line.size(), 1u) << out;
  ASSERT_EQ(sub_line.size(), 1u) << out;
  EXPECT_EQ(field_of(sub_line[0], "subscriptions"), "1") << sub_line[0];
  EXPECT_EQ(field_of(sub_line[0], "dropped"), "0") << sub_line[0];
  EXPECT_NE(field_of(pub_line[0], "peer"), field_of(sub_line[0], "peer"));
  EXPECT_EQ(
      lines_with(out, {"session opened", field_of(sub_line[0], "peer")}).size(),
      1u);
}

TEST_F(LoggingTest, ASessionCancelledByItsClientSaysSo) {
  auto sub = subscriber(1, "x.>");
  sub->cancel();
  ASSERT_TRUE(broker_->wait_for_output("ended=client_cancelled", patience))
      << broker_->output();
}

TEST_F(LoggingTest, RefusalsAreLoggedWithTheirReason) {
  auto s = conn_->open_session();
  ASSERT_TRUE(s->subscribe(1, "a..b"));
  ASSERT_TRUE(s->wait_for(kind::kError, patience).has_value());
  pb::CreateGroupRequest req;
  req.set_name("nopattern");
  grpc::ClientContext ctx;
  pb::GroupInfo info;
  EXPECT_FALSE(conn_->stub().CreateGroup(&ctx, req, &info).ok());
  ASSERT_TRUE(broker_->wait_for_occurrences("request refused", 2, patience))
      << broker_->output();
  auto out = broker_->output();
  EXPECT_EQ(
      lines_with(out, {"INFO  request refused peer=ipv4:127.0.0.1:",
                       "request=subscribe", "reason=invalid_pattern", "error="})
          .size(),
      1u)
      << out;
  EXPECT_EQ(lines_with(out, {"request refused", "request=CreateGroup",
                             "reason=invalid_pattern"})
                .size(),
            1u)
      << out;
}

TEST_F(LoggingTest, RefusalsOfOneReasonAreRateLimited) {
  auto s = conn_->open_session();
  for (uint64_t i = 1; i <= 20; ++i)
    ASSERT_TRUE(s->unsubscribe(100 + i, i));
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(s->wait_for(kind::kError, patience).has_value());
  EXPECT_TRUE(s->close().ok());
  // The session's end reports what its limit held back.
  ASSERT_TRUE(broker_->wait_for_output("15 more refusals suppressed", patience))
      << broker_->output();
  EXPECT_EQ(lines_with(broker_->output(),
                       {"request refused", "reason=unknown_subscription"})
                .size(),
            5u);
}

TEST_F(LoggingTest, GroupsCreatedAndDeletedAreLogged) {
  pb::CreateGroupRequest create;
  create.set_name("audit");
  create.mutable_settings()->set_pattern("audit.>");
  {
    grpc::ClientContext ctx;
    pb::GroupInfo info;
    ASSERT_TRUE(conn_->stub().CreateGroup(&ctx, create, &info).ok());
  }
  publish({"audit.a", "audit.b"});
  pb::DeleteGroupRequest del;
  del.set_name("audit");
  grpc::ClientContext ctx;
  pb::DeleteGroupReply reply;
  ASSERT_TRUE(conn_->stub().DeleteGroup(&ctx, del, &reply).ok());
  EXPECT_EQ(reply.dropped_messages(), 2u);
  ASSERT_TRUE(broker_->wait_for_output("group deleted", patience));
  auto out = broker_->output();
  EXPECT_EQ(lines_with(out, {"INFO  group created group=audit pattern=audit.> "
                             "policy=round_robin origin=request"})
                .size(),
            1u)
      << out;
  EXPECT_EQ(lines_with(out, {"INFO  group deleted group=audit pattern=audit.> "
                             "policy=round_robin dropped=2"})
                .size(),
            1u)
      << out;
}

TEST_F(LoggingTest, ASlowConsumersLossIsLoggedAndSoIsItsRecovery) {
  // A subscriber on its own connection that reads nothing for a while.
  raw_session slow{raw_channel(broker_->address(), true)};
  pb::ClientFrame sub;
  sub.mutable_subscribe()->set_subscription_id(3);
  sub.mutable_subscribe()->set_pattern("slow.topic");
  ASSERT_TRUE(slow.send(sub));
  ASSERT_TRUE(slow.read_until(kind::kSubscribed));
  std::vector<client::outgoing_message> batch(
      1000, {"slow.topic", std::string(1024, 'p'), {}, {}});
  // Until gRPC's windows are full and the subscription's 100 overflow.
  for (int i = 0; i < 200 && broker_->output().find("slow consumer losing") ==
                                 std::string::npos;
       ++i)
    ASSERT_TRUE(conn_->publish(batch).ok());
  ASSERT_TRUE(broker_->wait_for_output("slow consumer losing", patience))
      << broker_->output();
  auto losing = lines_with(broker_->output(),
                           {"WARN  slow consumer losing messages peer=",
                            "subscription=3 pattern=slow.topic lost="});
  ASSERT_EQ(losing.size(), 1u) << broker_->output();
  EXPECT_NE(field_of(losing[0], "lost"), "0");
  // Reading again, the subscriber catches up.
  EXPECT_TRUE(slow.close().ok());
  ASSERT_TRUE(broker_->wait_for_output("session closed", patience));
  auto out = broker_->output();
  auto caught_up = lines_with(
      out, {"INFO  slow consumer caught up", "subscription=3", "total="});
  ASSERT_EQ(caught_up.size(), 1u) << out;
  auto closed = lines_with(out, {"session closed", "subscriptions=1"});
  ASSERT_EQ(closed.size(), 1u) << out;
  // Messages still on their way when the loss began may overflow the
  // buffer again after it caught up (a flap within 10 s writes no new
  // line): the session's count covers at least what the line reported.
  EXPECT_GE(std::stoull(field_of(closed[0], "dropped")),
            std::stoull(field_of(caught_up[0], "total")));
  EXPECT_NE(field_of(caught_up[0], "total"), "0");
}

TEST_F(LoggingTest, DeadLettersAreLogged) {
  auto worker = conn_->open_session();
  ASSERT_TRUE(worker->join(1, "work", "jobs.>"));
  ASSERT_TRUE(worker->wait_for(kind::kSubscribed, patience).has_value());
  publish({"jobs.a"});
  auto got = worker->receive(1, patience);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(worker->reject({got[0].delivery_id()}));
  ASSERT_TRUE(broker_->wait_for_output("message dead-lettered", patience))
      << broker_->output();
  EXPECT_EQ(lines_with(broker_->output(),
                       {"INFO  message dead-lettered group=work "
                        "reason=rejected topic=$dlq.work attempts=1 "
                        "dead_lettered=1"})
                .size(),
            1u)
      << broker_->output();
  EXPECT_TRUE(
      lines_with(broker_->output(), {"group created group=work", "origin=auto"})
          .size() == 1u);
}

/// A broker that writes its summary every 300 ms.
class SummaryTest : public BrokerTest {
protected:
  std::vector<std::string> broker_args() override {
    return {"--config",
            write_temp_file("log_summary_interval = \"300ms\"\n", ".toml")};
  }
};

TEST_F(SummaryTest, ThePeriodicSummaryCountsWhatHappenedSinceTheLastOne) {
  ASSERT_TRUE(broker_->wait_for_output("INFO  summary", patience))
      << broker_->output();
  auto sub = subscriber(1, "sum.>");
  publish({"sum.a", "sum.b", "sum.c"});
  EXPECT_EQ(sub->receive(3, patience).size(), 3u);
  // Some summary after the deliveries counts all three, and later ones
  // count nothing more.
  auto deadline = std::chrono::steady_clock::now() + patience;
  std::vector<std::string> counted;
  while (counted.empty() && std::chrono::steady_clock::now() < deadline) {
    auto seen = lines_with(broker_->output(), {"summary"}).size();
    ASSERT_TRUE(
        broker_->wait_for_occurrences("INFO  summary", seen + 1, patience));
    counted = lines_with(broker_->output(), {"summary", "published=3"});
  }
  ASSERT_EQ(counted.size(), 1u) << broker_->output();
  auto out = broker_->output();
  auto all = lines_with(out, {"INFO  summary sessions="});
  uint64_t published = 0;
  uint64_t delivered = 0;
  for (auto& line : all) {
    published += std::stoull(field_of(line, "published"));
    delivered += std::stoull(field_of(line, "delivered"));
    EXPECT_FALSE(field_of(line, "held_bytes").empty()) << line;
    EXPECT_FALSE(field_of(line, "topics").empty()) << line;
    EXPECT_FALSE(field_of(line, "groups").empty()) << line;
  }
  EXPECT_EQ(published, 3u) << out;
  EXPECT_EQ(delivered, 3u) << out;
}

TEST(LogLevel, WarnHidesInfoLines) {
  // At warn the "listening on" line is hidden too: listen on a known port.
  auto port = free_loopback_port();
  ASSERT_NE(port, 0);
  auto address = "127.0.0.1:" + std::to_string(port);
  broker_process broker{{"--listen", address, "--log-level", "warn", "--config",
                         write_temp_file("[limits]\nmax_subscriptions_per_"
                                         "session = 1\n",
                                         ".toml")},
                        broker_process::default_listen};
  client::connection conn{address};
  ASSERT_TRUE(conn.wait_connected(patience)) << broker.output();
  auto s = conn.open_session();
  ASSERT_TRUE(s->subscribe(1, "a"));
  ASSERT_TRUE(s->wait_for(kind::kSubscribed, patience).has_value());
  ASSERT_TRUE(s->subscribe(2, "b")); // beyond the limit: a warning
  ASSERT_TRUE(s->wait_for(kind::kError, patience).has_value());
  EXPECT_TRUE(s->close().ok());
  ASSERT_TRUE(broker.wait_for_output("WARN  request refused", patience))
      << broker.output();
  EXPECT_EQ(broker.stop(SIGTERM), 0);
  auto out = broker.output();
  EXPECT_TRUE(lines_with(out, {"INFO "}).empty()) << out;
  EXPECT_TRUE(lines_with(out, {"session opened"}).empty()) << out;
  EXPECT_EQ(lines_with(out, {"WARN  request refused", "reason=limit_exceeded"})
                .size(),
            1u)
      << out;
}

TEST(LogLevel, ABadLevelOrFormatIsAnErrorWithExitCode2) {
  auto [code, out] = run_broker_command({"--log-level", "loud"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("--log-level: got \"loud\"; expected trace, debug, "
                     "info, warn, error or off"),
            std::string::npos)
      << out;
  std::tie(code, out) = run_broker_command({"--log-format", "xml"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("--log-format: got \"xml\"; expected text or json"),
            std::string::npos)
      << out;
}

TEST(LogLevel, TheFlagOverridesTheConfig) {
  auto config = write_temp_file(
      "log_level = \"error\"\nlog_format = \"json\"\n", ".toml");
  auto [code, out] =
      run_broker_command({"--check-config", config, "--log-level", "debug",
                          "--log-format", "text"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("log_level debug, log_format text"), std::string::npos)
      << out;
}

TEST(LogFormat, JsonLinesEachParseAsOneJsonObject) {
  broker_process broker{{"--log-format", "json", "--config",
                         write_temp_file("log_summary_interval = \"200ms\"\n"
                                         "[groups.audit]\npattern = "
                                         "\"audit.>\"\n",
                                         ".toml")}};
  ASSERT_TRUE(broker.wait_ready()) << broker.output();
  {
    client::connection conn{broker.address()};
    auto s = conn.open_session();
    ASSERT_TRUE(s->subscribe(1, "bad..\"pattern\\"));
    ASSERT_TRUE(s->wait_for(kind::kError, patience).has_value());
    EXPECT_TRUE(s->close().ok());
  }
  ASSERT_TRUE(broker.wait_for_output("\"msg\":\"session closed\"", patience))
      << broker.output();
  ASSERT_TRUE(broker.wait_for_output("\"msg\":\"summary\"", patience));
  EXPECT_EQ(broker.stop(SIGTERM), 0);
  auto out = broker.output();
  // Every line, start-up summary and shutdown included, is one object with
  // ts, level and msg first; Python's json module is the judge.
  static const std::string check = R"(
import json, sys
n = 0
for line in sys.stdin:
    o = json.loads(line)
    assert list(o)[:3] == ["ts", "level", "msg"], line
    assert o["ts"].endswith("Z") and len(o["ts"]) == 24, line
    assert o["level"] in ("trace", "debug", "info", "warn", "error"), line
    n += 1
print("lines", n)
)";
  auto [code, result] = run_command(TINYBROKER_PYTHON3, {"-c", check}, &out);
  EXPECT_EQ(code, 0) << result << "\n" << out;
  EXPECT_NE(result.find("lines "), std::string::npos) << result;
  for (auto* msg : {"\"msg\":\"session opened\"", "\"msg\":\"request refused\"",
                    "\"msg\":\"group created\"", "\"msg\":\"summary\"",
                    "listening on", "\"msg\":\"stopped\""})
    EXPECT_NE(out.find(msg), std::string::npos) << msg << "\n" << out;
  EXPECT_NE(out.find("\"reason\":\"invalid_pattern\""), std::string::npos);
  EXPECT_NE(out.find("\"delivered\":0"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
