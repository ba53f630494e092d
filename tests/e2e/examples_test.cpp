// End to end: the example programs run against a real broker, so they
// cannot rot.

#include <string>

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
}

} // namespace
} // namespace tb::test
