// End to end: the clients with tokens against a real broker with [auth]
// (auth_fixture.hpp): tinybroker-cli with a good token, none, a wrong one
// and one without the permission; the async C++ client; the Python example.

#include <future>
#include <string>

#include "auth_fixture.hpp"
#include "auth_tools.hpp"
#include "client/async_client.hpp"

namespace tb::test {
namespace {

// Returns true if `out` contains `text`.
bool has(const std::string& out, const std::string& text) {
  return out.find(text) != std::string::npos;
}

class ClientTokenTest : public AuthTest {
protected:
  // Runs tinybroker-cli against the broker with `env` and `args`.
  std::pair<int, std::string> cli(const std::vector<std::string>& env,
                                  const std::vector<std::string>& args) {
    return run_cli(broker_->address(), env, args);
  }
};

TEST_F(ClientTokenTest, CliWithAGoodTokenPublishesSubscribesAndAdministers) {
  auto file = write_temp_file(orders_secret + "\n", ".token");
  auto argv = clean_env({"TINYBROKER_TOKEN_FILE=" + file},
                        std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-cli");
  argv.insert(argv.end(), {"--server", broker_->address(), "sub", "orders.eu.>",
                           "--count", "1"});
  child_process sub{"/usr/bin/env", argv};
  ASSERT_TRUE(sub.wait_for_output("subscribed to", patience)) << sub.output();
  auto [pub, pub_out] =
      cli({}, {"--token-file", file, "pub", "orders.eu.created", "hello"});
  EXPECT_EQ(pub, 0) << pub_out;
  EXPECT_TRUE(has(pub_out, "published #")) << pub_out;
  EXPECT_EQ(sub.wait_exit(patience), 0) << sub.output();
  EXPECT_TRUE(has(sub.output(), "hello")) << sub.output();
  auto [ls, ls_out] =
      cli({"TINYBROKER_TOKEN=" + ops_secret}, {"--json", "groups", "ls"});
  EXPECT_EQ(ls, 0) << ls_out;
  auto [stats, stats_out] = cli({}, {"--token", ops_secret, "stats"});
  EXPECT_EQ(stats, 0) << stats_out;
}

TEST_F(ClientTokenTest, CliWithoutATokenPrintsUnauthenticated) {
  auto [pub, pub_out] = cli({}, {"pub", "orders.eu.created", "x"});
  EXPECT_EQ(pub, 1) << pub_out;
  EXPECT_TRUE(has(pub_out, "tinybroker-cli: publish failed: "
                           "UNAUTHENTICATED: unauthenticated: "))
      << pub_out;
  auto [sub, sub_out] = cli({}, {"sub", "orders.eu.>"});
  EXPECT_EQ(sub, 1) << sub_out;
  EXPECT_TRUE(has(sub_out, "tinybroker-cli: refused: UNAUTHENTICATED: "))
      << sub_out;
  std::string wrong = "not-a-valid-token-at-all";
  auto [ls, ls_out] = cli({}, {"--token", wrong, "groups", "ls"});
  EXPECT_EQ(ls, 1) << ls_out;
  EXPECT_TRUE(has(ls_out, "ListGroups failed: UNAUTHENTICATED: ")) << ls_out;
  EXPECT_FALSE(has(ls_out, wrong)) << ls_out;
}

TEST_F(ClientTokenTest, CliWithoutThePermissionPrintsPermissionDenied) {
  auto [pub, pub_out] =
      cli({}, {"--token", orders_secret, "pub", "invoices.eu.1", "x"});
  EXPECT_EQ(pub, 1) << pub_out;
  EXPECT_TRUE(has(pub_out, "refused: PERMISSION_DENIED")) << pub_out;
  auto [sub, sub_out] = cli({}, {"--token", orders_secret, "sub", "orders.>"});
  EXPECT_EQ(sub, 1) << sub_out;
  EXPECT_TRUE(has(sub_out, "subscribe to \"orders.>\" refused: "
                           "PERMISSION_DENIED"))
      << sub_out;
  auto [ls, ls_out] = cli({}, {"--token", orders_secret, "groups", "ls"});
  EXPECT_EQ(ls, 1) << ls_out;
  EXPECT_TRUE(has(ls_out, "ListGroups failed: PERMISSION_DENIED: ")) << ls_out;
}

TEST_F(ClientTokenTest, AsyncClientWithATokenPublishesAndReceives) {
  client::client_options options;
  options.security.token = orders_secret;
  client::async_client client{broker_->address(), options};
  std::promise<std::string> got;
  auto sub = client.subscribe("orders.eu.>", [&got](client::delivery d) {
    got.set_value(std::string{d.topic()});
  });
  ASSERT_TRUE(sub->wait_subscribed(patience).ok());
  auto result = client.publish({"orders.eu.created", "x", {}, {}}).get();
  EXPECT_TRUE(result.ok()) << result.status.error_message();
  auto topic = got.get_future();
  ASSERT_EQ(topic.wait_for(patience), std::future_status::ready);
  EXPECT_EQ(topic.get(), "orders.eu.created");
  auto forbidden = client.subscribe("invoices.>", [](client::delivery) {});
  EXPECT_EQ(forbidden->wait_subscribed(patience).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  client.close();
}

TEST_F(ClientTokenTest, AsyncClientWithoutATokenClosesUnauthenticated) {
  client::async_client client{broker_->address()};
  auto sub = client.subscribe("orders.eu.>", [](client::delivery) {});
  auto status = sub->wait_subscribed(patience);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << status.error_message();
  EXPECT_EQ(client.state(), client::connection_state::closed);
}

TEST_F(ClientTokenTest, PythonExampleWithATokenPublishes) {
  std::vector<std::string> env{"PYTHONPATH=" TINYBROKER_PYTHON_GEN_DIR,
                               "TINYBROKER_TOKEN=" + orders_secret};
  auto [code, out] =
      run_with_env(TINYBROKER_PYTHON3, env,
                   {TINYBROKER_PYTHON_EXAMPLE, "--server", broker_->address(),
                    "publish", "orders.eu.created", "a", "b"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(has(out, "published #2")) << out;
  env.pop_back();
  auto [none, none_out] =
      run_with_env(TINYBROKER_PYTHON3, env,
                   {TINYBROKER_PYTHON_EXAMPLE, "--server", broker_->address(),
                    "publish", "orders.eu.created", "a"});
  EXPECT_EQ(none, 1) << none_out;
  EXPECT_TRUE(has(none_out, "publish failed: UNAUTHENTICATED")) << none_out;
}

} // namespace
} // namespace tb::test
