// End to end: request/reply through the C++ client (connection::request,
// async_client::request and serve) and tinybroker-cli (request, reply
// --command), against a real broker: answers, NO_RESPONDERS at once,
// DEADLINE_EXCEEDED, group requests acked by their reply.

#include <atomic>
#include <chrono>
#include <csignal>
#include <future>
#include <string>

#include "cli_fixture.hpp"
#include "client_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using RequestReplyTest = AsyncClientTest;

// A responder that answers each request with its payload in upper case.
client::reply_message upper(const client::delivery& d) {
  std::string out = d.payload();
  for (auto& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return {out, {{"served-by", "upper"}}};
}

TEST_F(RequestReplyTest, SyncAndAsyncRequestsGetTheResponderReply) {
  auto responder = make_client();
  auto sub = responder->serve("svc.upper", upper);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  auto result = conn_->request({"svc.upper", "hello", {}, {}});
  ASSERT_TRUE(result.ok()) << result.status.error_message();
  EXPECT_EQ(result.payload, "HELLO");
  EXPECT_EQ(result.headers["served-by"], "upper");
  EXPECT_NE(result.message_id, 0u);
  auto caller = make_client();
  auto future = caller->request({"svc.upper", "async", {}, {}});
  ASSERT_EQ(future.wait_for(patience), std::future_status::ready);
  auto async_result = future.get();
  ASSERT_TRUE(async_result.ok()) << async_result.status.error_message();
  EXPECT_EQ(async_result.payload, "ASYNC");
  std::promise<client::reply_result> done;
  caller->request(
      {"svc.upper", "callback", {}, {}}, {},
      [&done](const client::reply_result& r) { done.set_value(r); });
  auto called = done.get_future();
  ASSERT_EQ(called.wait_for(patience), std::future_status::ready);
  EXPECT_EQ(called.get().payload, "CALLBACK");
}

TEST_F(RequestReplyTest, NobodyListeningIsNoRespondersAtOnce) {
  auto started = steady::now();
  client::request_options options;
  options.timeout = 10s;
  auto result = conn_->request({"svc.nobody", "x", {}, {}}, options);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(result.no_responders()) << result.status.error_message();
  EXPECT_NE(result.status.error_message().find("svc.nobody"),
            std::string::npos);
  EXPECT_LT(steady::now() - started, 2s);
}

TEST_F(RequestReplyTest, NoReplyInTimeIsDeadlineExceeded) {
  auto silent = make_client();
  auto sub = silent->subscribe("svc.silent", [](client::delivery) {});
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  client::request_options options;
  options.timeout = 300ms;
  auto started = steady::now();
  auto result = conn_->request({"svc.silent", "x", {}, {}}, options);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << result.status.error_message();
  EXPECT_GE(steady::now() - started, 300ms);
  EXPECT_LT(steady::now() - started, 1200ms);
}

TEST_F(RequestReplyTest, GroupRequestGoesToOneMemberAndTheReplyAcksIt) {
  std::atomic<int> served{0};
  client::subscribe_options member;
  member.group = "uppers";
  auto handler = [&served](const client::delivery& d) {
    ++served;
    return upper(d);
  };
  auto a = make_client();
  auto b = make_client();
  auto sub_a = a->serve("svc.>", handler, member);
  auto sub_b = b->serve("svc.>", handler, member);
  ASSERT_TRUE(sub_a->wait_subscribed(patience).ok());
  ASSERT_TRUE(sub_b->wait_subscribed(patience).ok());
  client::request_options options;
  options.group = "uppers";
  for (int i = 0; i < 4; ++i) {
    auto result = conn_->request({"svc.g", "job", {}, {}}, options);
    ASSERT_TRUE(result.ok()) << result.status.error_message();
    EXPECT_EQ(result.payload, "JOB");
  }
  EXPECT_EQ(served.load(), 4); // one member each, not both
  EXPECT_TRUE(eventually([&] {
    return group_info("uppers").counters().acked() == 4;
  })) << group_info("uppers").DebugString();
  EXPECT_EQ(group_info("uppers").counters().in_flight(), 0u);
}

TEST_F(RequestReplyTest, StatsCountRequestsRepliesAndNoResponders) {
  auto responder = make_client();
  auto sub = responder->serve("svc.count", upper);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  ASSERT_TRUE(conn_->request({"svc.count", "x", {}, {}}).ok());
  EXPECT_TRUE(conn_->request({"svc.none", "x", {}, {}}).no_responders());
  tinybroker::v1::StatsReply stats;
  grpc::ClientContext ctx;
  ASSERT_TRUE(conn_->stub().Stats(&ctx, {}, &stats).ok());
  EXPECT_EQ(stats.broker().requests(), 1u);
  EXPECT_EQ(stats.broker().replies(), 1u);
  EXPECT_EQ(stats.broker().no_responders(), 1u);
}

using CliRequestTest = CliTest;

TEST_F(CliRequestTest, RequestWithoutRespondersExitsOneAtOnce) {
  auto started = steady::now();
  auto [code, out] = cli({"request", "svc.none", "x", "--timeout", "10s"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("no responders: nobody answers requests to svc.none"),
            std::string::npos)
      << out;
  EXPECT_LT(steady::now() - started, 5s);
}

TEST_F(CliRequestTest, ReplyCommandAnswersWithItsOutput) {
  child_process replier{cli_binary(),
                        at_broker({"reply", "svc.up", "--command", "tr a-z A-Z",
                                   "--count", "2"})};
  ASSERT_TRUE(replier.wait_for_output("answering requests to svc.up", patience))
      << replier.output();
  auto [code, out] = cli({"request", "svc.up", "hello"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "HELLO\n");
  std::tie(code, out) = cli({"request", "svc.up", "json", "--json"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"payload\":\"JSON\""), std::string::npos) << out;
  auto exit = replier.wait_exit(patience);
  ASSERT_TRUE(exit.has_value()) << replier.output();
  EXPECT_EQ(*exit, 0) << replier.output();
  EXPECT_NE(replier.output().find("svc.up replied 5 bytes"), std::string::npos)
      << replier.output();
}

// A --command that hangs is killed after --command-timeout, with what it
// started; its request gets no reply (the caller's timeout) and the
// replier answers the next one.
TEST_F(CliRequestTest, ReplyCommandThatHangsIsKilledAndTheReplierGoesOn) {
  child_process replier{
      cli_binary(),
      at_broker({"reply", "svc.hang", "--command",
                 "read x; [ \"$x\" = hang ] && sleep 30; echo \"ok:$x\"",
                 "--command-timeout", "500ms", "--count", "1"})};
  ASSERT_TRUE(
      replier.wait_for_output("answering requests to svc.hang", patience))
      << replier.output();
  auto started = steady::now();
  auto [code, out] = cli({"request", "svc.hang", "hang", "--timeout", "2s"});
  EXPECT_EQ(code, 3) << out;
  EXPECT_NE(out.find("no reply within --timeout 2s"), std::string::npos) << out;
  EXPECT_LT(steady::now() - started, 5s);
  EXPECT_TRUE(replier.wait_for_output(
      "svc.hang: --command did not finish within --command-timeout 500ms; "
      "killed it, no reply sent",
      patience))
      << replier.output();
  std::tie(code, out) = cli({"request", "svc.hang", "fast", "--timeout", "5s"});
  EXPECT_EQ(code, 0) << out << replier.output();
  EXPECT_EQ(out, "ok:fast\n");
  auto exit = replier.wait_exit(patience);
  ASSERT_TRUE(exit.has_value()) << replier.output();
  EXPECT_EQ(*exit, 0) << replier.output();
}

// A command that exits without reading its input (more than a pipe holds)
// still gets a reply sent, and does not end the replier with SIGPIPE.
TEST_F(CliRequestTest, ReplyCommandThatDoesNotReadItsInputStillReplies) {
  child_process replier{cli_binary(),
                        at_broker({"reply", "svc.deaf", "--command",
                                   "echo deaf", "--count", "1"})};
  ASSERT_TRUE(
      replier.wait_for_output("answering requests to svc.deaf", patience))
      << replier.output();
  auto [code, out] = cli(
      {"request", "svc.deaf", std::string(100'000, 'x'), "--timeout", "5s"});
  EXPECT_EQ(code, 0) << out << replier.output();
  EXPECT_EQ(out, "deaf\n");
  auto exit = replier.wait_exit(patience);
  ASSERT_TRUE(exit.has_value()) << replier.output();
  EXPECT_EQ(*exit, 0) << replier.output();
}

TEST_F(CliRequestTest, ReplyCommandTimeoutMustBeADurationAboveZero) {
  for (auto* bad : {"0", "soon"}) {
    auto [code, out] =
        cli({"reply", "svc.x", "--command", "cat", "--command-timeout", bad});
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find("--command-timeout"), std::string::npos) << out;
  }
}

// --group on both commands: a request with --group goes to the group's
// replier alone (a fan-out replier on the topic is passed over) and its
// reply acks the delivery; with no member, no responders naming the group.
TEST_F(CliRequestTest, AGroupRequestGoesToTheGroupsReplierAndIsAcked) {
  auto [code, out] = cli({"request", "svc.work", "x", "--group", "workers"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("no responders: nobody answers requests to svc.work in "
                     "group workers"),
            std::string::npos)
      << out;
  child_process fanout{cli_binary(), at_broker({"reply", "svc.work",
                                                "--command", "echo fan-out"})};
  child_process member{cli_binary(),
                       at_broker({"reply", "svc.work", "--group", "workers",
                                  "--command", "echo member", "--count", "2"})};
  ASSERT_TRUE(
      fanout.wait_for_output("answering requests to svc.work", patience))
      << fanout.output();
  ASSERT_TRUE(member.wait_for_output(
      "answering requests to svc.work in group workers", patience))
      << member.output();
  for (int i = 0; i < 2; ++i) {
    std::tie(code, out) =
        cli({"request", "svc.work", "x", "--group", "workers"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "member\n");
  }
  auto exit = member.wait_exit(patience);
  ASSERT_TRUE(exit.has_value()) << member.output();
  EXPECT_EQ(*exit, 0) << member.output();
  auto acked = [&] {
    return group_counters("workers").acked();
  };
  EXPECT_TRUE(eventually([&] { return acked() == 2; })) << acked();
  EXPECT_EQ(fanout.output().find("replied"), std::string::npos)
      << fanout.output();
}

// SIGTERM ends `reply` cleanly (exit 0, saying how many it answered), and
// the commands it runs do not inherit its blocked Ctrl-C and SIGTERM: a
// command that sends itself SIGTERM dies of it before its `echo`.
TEST_F(CliRequestTest,
       ReplyStoppedBySigtermExitsZeroAndItsCommandsStaySignalable) {
  child_process replier{cli_binary(),
                        at_broker({"reply", "svc.term", "--command",
                                   "kill -TERM $$; echo late"})};
  ASSERT_TRUE(
      replier.wait_for_output("answering requests to svc.term", patience))
      << replier.output();
  auto [code, out] = cli({"request", "svc.term", "x"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find("late"), std::string::npos) << out;
  ASSERT_TRUE(replier.wait_for_output("replied 0 bytes", patience))
      << replier.output();
  auto exit = replier.stop(SIGTERM);
  ASSERT_TRUE(exit.has_value()) << replier.output();
  EXPECT_EQ(*exit, 0) << replier.output();
  EXPECT_NE(replier.output().find("stopped by SIGTERM; answered 1"),
            std::string::npos)
      << replier.output();
}

TEST_F(CliRequestTest, RequestWithoutAReplyInTimeExitsThree) {
  auto sub = start_sub({"svc.mute"});
  auto [code, out] = cli({"request", "svc.mute", "x", "--timeout", "300ms"});
  EXPECT_EQ(code, 3) << out;
  EXPECT_NE(out.find("no reply within --timeout 300ms"), std::string::npos)
      << out;
}

} // namespace
} // namespace tb::test
