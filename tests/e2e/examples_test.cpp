// End to end: the example programs run against a real broker, so they
// cannot rot.

#include <csignal>
#include <string>
#include <vector>

#include "e2e_fixture.hpp"

namespace tb::test {
namespace {

using ExamplesTest = BrokerTest;

// Returns the path of an example binary.
std::string example(const std::string& name) {
  return std::string{TINYBROKER_EXAMPLES_DIR} + "/" + name;
}

TEST_F(ExamplesTest, PublishSubscribeTourWorksAsTheReadmeSays) {
  child_process sub{example("publish_subscribe"),
                    {"--server", broker_->address(), "sub", "orders.>", "2"}};
  ASSERT_TRUE(sub.wait_for_output("subscribed to orders.>", patience))
      << sub.output();
  auto pub = [&](const std::string& topic, const std::string& data) {
    auto [code, out] =
        run_command(example("publish_subscribe"),
                    {"--server", broker_->address(), "pub", topic, data});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("published #"), std::string::npos) << out;
  };
  pub("orders.eu.created", "{\"id\": 1}");
  pub("shipping.eu.created", "not for orders.>");
  pub("orders.us.paid", "{\"id\": 2}");
  EXPECT_EQ(sub.wait_exit(patience), 0);
  auto out = sub.output();
  EXPECT_NE(out.find("orders.eu.created: {\"id\": 1}"), std::string::npos)
      << out;
  EXPECT_NE(out.find("orders.us.paid: {\"id\": 2}"), std::string::npos) << out;
  EXPECT_EQ(out.find("shipping"), std::string::npos) << out;
}

TEST_F(ExamplesTest, PublishSubscribeReportsARefusedTopic) {
  auto [code, out] =
      run_command(example("publish_subscribe"),
                  {"--server", broker_->address(), "pub", "bad..topic", "x"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("bad..topic"), std::string::npos) << out;
  // Its error line starts with the program's name, like every tool's.
  EXPECT_NE(out.find("publish_subscribe: refused ("), std::string::npos) << out;
}

TEST_F(ExamplesTest, WorkQueueMovesAKilledWorkersJobsToTheOther) {
  child_process holder{example("work_queue"),
                       {"--server", broker_->address(), "worker", "--no-ack"}};
  ASSERT_TRUE(holder.wait_for_output("joined workers", patience))
      << holder.output();
  auto [code, out] = run_command(
      example("work_queue"), {"--server", broker_->address(), "publish", "4"});
  ASSERT_EQ(code, 0) << out;
  // The only worker holds every job unacked; killing it hands them on.
  ASSERT_TRUE(holder.wait_for_output("job 4 (attempt 1)", patience))
      << holder.output();
  child_process worker{example("work_queue"),
                       {"--server", broker_->address(), "worker", "4"}};
  ASSERT_TRUE(worker.wait_for_output("joined workers", patience))
      << worker.output();
  holder.stop(SIGKILL);
  EXPECT_EQ(worker.wait_exit(patience), 0);
  auto got = worker.output();
  for (auto job : {"1", "2", "3", "4"})
    EXPECT_NE(got.find(std::string{"job "} + job + " (attempt 2)"),
              std::string::npos)
        << got;
}

TEST_F(ExamplesTest, DeadLettersEndsThePoisonMessageOnTheDlqTopic) {
  auto [code, out] =
      run_command(example("dead_letters"), {"--server", broker_->address()});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("ack ok 1"), std::string::npos) << out;
  EXPECT_NE(out.find("ack ok 2"), std::string::npos) << out;
  EXPECT_NE(out.find("nack poison (attempt 3)"), std::string::npos) << out;
  EXPECT_EQ(out.find("nack poison (attempt 4)"), std::string::npos) << out;
  EXPECT_NE(out.find("dead letter on $dlq.payments: poison"), std::string::npos)
      << out;
  EXPECT_NE(out.find("x-tinybroker-attempts: 3"), std::string::npos) << out;
  EXPECT_NE(out.find("x-tinybroker-original-topic: payments.eu"),
            std::string::npos)
      << out;
}

// Runs the Python example with the generated code on its path.
std::vector<std::string> python_example(std::vector<std::string> args) {
  std::vector<std::string> argv{"PYTHONPATH=" TINYBROKER_PYTHON_GEN_DIR,
                                TINYBROKER_PYTHON3, TINYBROKER_PYTHON_EXAMPLE};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

TEST_F(ExamplesTest, PythonExamplePublishesAndAcksAsAGroupWorker) {
  child_process worker{"/usr/bin/env",
                       python_example({"--server", broker_->address(), "worker",
                                       "py-workers", "jobs.>", "3"})};
  ASSERT_TRUE(worker.wait_for_output("joined py-workers", patience))
      << worker.output();
  auto [code, out] = run_command(
      "/usr/bin/env", python_example({"--server", broker_->address(), "publish",
                                      "jobs.resize", "a", "b", "c"}));
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("published #3"), std::string::npos) << out;
  EXPECT_EQ(worker.wait_exit(patience), 0) << worker.output();
  auto got = worker.output();
  for (auto job : {"a", "b", "c"})
    EXPECT_NE(
        got.find(std::string{"job "} + job + " on jobs.resize (attempt 1)"),
        std::string::npos)
        << got;
  EXPECT_NE(got.find("acked 3 jobs"), std::string::npos) << got;
}

TEST_F(ExamplesTest, PythonExampleReportsARefusedTopic) {
  auto [code, out] = run_command(
      "/usr/bin/env", python_example({"--server", broker_->address(), "publish",
                                      "bad..topic", "x"}));
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("refused (3)"), std::string::npos) << out;
  EXPECT_NE(out.find("bad..topic"), std::string::npos) << out;
}

TEST_F(ExamplesTest, RequestReplyAnswersAndSaysNoRespondersWithoutAService) {
  auto [code, out] = run_command(example("request_reply"),
                                 {"--server", broker_->address(), "ask", "hi"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("no responders"), std::string::npos) << out;
  child_process service{example("request_reply"),
                        {"--server", broker_->address(), "serve"}};
  ASSERT_TRUE(service.wait_for_output("serving svc.upper", patience))
      << service.output();
  std::tie(code, out) = run_command(
      example("request_reply"), {"--server", broker_->address(), "ask", "hi"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "HI\n");
}

TEST_F(ExamplesTest, PythonRequestReplyExampleAnswers) {
  auto python = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{
        "PYTHONPATH=" TINYBROKER_PYTHON_GEN_DIR, TINYBROKER_PYTHON3,
        TINYBROKER_SOURCE_DIR "/examples/python/request_reply.py", "--server",
        broker_->address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  };
  auto [code, out] = run_command("/usr/bin/env", python({"ask", "abc"}));
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("no responders"), std::string::npos) << out;
  child_process service{"/usr/bin/env", python({"serve"})};
  ASSERT_TRUE(service.wait_for_output("serving svc.reverse", patience))
      << service.output();
  std::tie(code, out) = run_command("/usr/bin/env", python({"ask", "abc"}));
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "cba\n");
}

} // namespace
} // namespace tb::test
