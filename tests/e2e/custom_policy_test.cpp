// End to end: the user-written policy of examples/custom_policy, in its own
// broker program started from the example's TOML file, routes high-priority
// messages to the members tagged "high" and the rest to the others.

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "client/async_client.hpp"
#include "e2e_fixture.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;

/// The example broker `priority_broker` with custom_policy.toml.
class CustomPolicyTest : public BrokerTest {
protected:
  std::string broker_binary() override {
    return std::string{TINYBROKER_EXAMPLES_DIR} + "/priority_broker";
  }

  std::vector<std::string> broker_args() override {
    return {"--config", std::string{TINYBROKER_SOURCE_DIR} +
                            "/examples/custom_policy/custom_policy.toml"};
  }

  /// Opens a session that joins "alerts" with `tags` and waits until the
  /// broker confirmed it.
  std::unique_ptr<client::session> member(std::vector<std::string> tags) {
    auto session = conn_->open_session();
    pb::ClientFrame frame;
    frame.set_request_id(1);
    auto* sub = frame.mutable_subscribe();
    sub->set_subscription_id(1);
    sub->set_pattern("alerts.>");
    sub->set_group("alerts");
    for (auto& tag : tags)
      sub->add_tags(tag);
    EXPECT_TRUE(session->send(frame));
    auto confirmed = session->wait_for(pb::ServerFrame::kSubscribed, patience);
    EXPECT_TRUE(confirmed.has_value()) << "join with tags was not confirmed";
    return session;
  }

  /// Publishes `payload` to `topic` with the header priority=`priority`.
  void publish_alert(const std::string& topic, const std::string& payload,
                     const std::string& priority) {
    std::vector<client::outgoing_message> batch{
        {topic, payload, {{"priority", priority}}, {}}};
    std::vector<pb::PublishResult> results;
    auto status = conn_->publish(batch, &results);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_FALSE(results[0].has_error()) << results[0].error().message();
  }

  /// Returns the payloads of `deliveries`, sorted.
  static std::set<std::string>
  payloads(const std::vector<pb::Delivery>& deliveries) {
    std::set<std::string> result;
    for (auto& d : deliveries)
      result.insert(d.payload());
    return result;
  }
};

TEST_F(CustomPolicyTest, HighPriorityGoesToHighMembersAndTheRestToOthers) {
  auto urgent = member({"high"});
  auto routine = member({});
  publish_alert("alerts.disk", "disk full", "high");
  publish_alert("alerts.cpu", "cpu warm", "low");
  publish_alert("alerts.net", "link down", "high");
  publish_alert("alerts.fan", "fan noisy", "low");
  EXPECT_EQ(payloads(urgent->receive(2, patience)),
            (std::set<std::string>{"disk full", "link down"}));
  EXPECT_EQ(payloads(routine->receive(2, patience)),
            (std::set<std::string>{"cpu warm", "fan noisy"}));
  EXPECT_TRUE(urgent->receive(1, quiet_period).empty());
  EXPECT_TRUE(routine->receive(1, quiet_period).empty());
}

TEST_F(CustomPolicyTest, WithoutAHighMemberUrgentWorkStillGetsDone) {
  auto routine = member({"other"});
  publish_alert("alerts.disk", "disk full", "high");
  EXPECT_EQ(payloads(routine->receive(1, patience)),
            (std::set<std::string>{"disk full"}));
}

TEST_F(CustomPolicyTest, TheCliJoinsWithTags) {
  auto routine = member({});
  child_process urgent{cli_binary(),
                       {"--server", broker_->address(), "sub", "alerts.>",
                        "--group", "alerts", "--tag", "high", "--count", "1"}};
  ASSERT_TRUE(urgent.wait_for_output("subscribed to alerts.>", patience))
      << urgent.output();
  publish_alert("alerts.disk", "disk full", "high");
  EXPECT_EQ(urgent.wait_exit(patience), 0) << urgent.output();
  EXPECT_NE(urgent.output().find("disk full"), std::string::npos)
      << urgent.output();
  EXPECT_TRUE(routine->receive(1, quiet_period).empty());
}

TEST_F(CustomPolicyTest, TheAsyncClientJoinsWithTags) {
  auto routine = member({});
  client::async_client async{broker_->address()};
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<std::string> got;
  client::subscribe_options options;
  options.group = "alerts";
  options.tags = {"high"};
  auto sub = async.subscribe(
      "alerts.>",
      [&](client::delivery d) {
        std::lock_guard<std::mutex> guard{mtx};
        got.emplace_back(d.payload());
        d.ack();
        cv.notify_all();
      },
      options);
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  publish_alert("alerts.disk", "disk full", "high");
  std::unique_lock<std::mutex> guard{mtx};
  cv.wait_for(guard, patience, [&] { return !got.empty(); });
  EXPECT_EQ(got, (std::vector<std::string>{"disk full"}));
}

TEST_F(CustomPolicyTest, TheStockBrokerRefusesTheUnregisteredPolicy) {
  auto [code, out] =
      run_broker_command({"--listen", "127.0.0.1:0", "--config",
                          std::string{TINYBROKER_SOURCE_DIR} +
                              "/examples/custom_policy/custom_policy.toml"});
  EXPECT_EQ(code, 2) << out; // a config problem, found before the start
  EXPECT_NE(out.find("unknown policy \"priority_first\""), std::string::npos)
      << out;
}

} // namespace
} // namespace tb::test
