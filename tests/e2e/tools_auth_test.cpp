// The token and TLS settings of tinybroker-bench (also when started by
// `tinybroker-cli bench`), the Python example and the C++ examples, run as
// real processes against the stand-in broker.

#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "auth_tools.hpp"

namespace tb::test {
namespace {

// Returns tinybroker-bench arguments for a tiny idle run whose "broker"
// memory is this test process's.
std::vector<std::string> idle_run() {
  return {"--scenario", "idle",         "--sessions",
          "2",          "--broker-pid", std::to_string(getpid())};
}

// Returns the arguments that run the Python example with `args`.
std::vector<std::string> python(const std::vector<std::string>& args) {
  std::vector<std::string> argv{TINYBROKER_PYTHON_EXAMPLE};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The environment the Python example needs, plus `env`.
std::vector<std::string> python_env(std::vector<std::string> env) {
  env.insert(env.begin(), "PYTHONPATH=" TINYBROKER_PYTHON_GEN_DIR);
  return env;
}

TEST(ToolsAuth, BenchSendsTheTokenOfItsFlagOrVariable) {
  fake_broker broker{wanting_token()};
  auto bench = std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-bench";
  auto file = write_temp_file(good_token + "\n", ".token");
  auto args = idle_run();
  args.insert(args.begin(),
              {"--server", broker.address(), "--token-file", file});
  auto [flag, flag_out] = run_with_env(bench, {}, args);
  EXPECT_EQ(flag, 0) << flag_out;
  auto [env, env_out] = run_with_env(
      bench, {"TINYBROKER_TOKEN=" + good_token},
      {"--server", broker.address(), "--scenario", "idle", "--sessions", "2",
       "--broker-pid", std::to_string(getpid())});
  EXPECT_EQ(env, 0) << env_out;
  int total = 0;
  EXPECT_EQ(calls_with(broker, "/Session", good_bearer, &total), 4);
  EXPECT_EQ(total, 4);
  auto [bad, bad_out] = run_with_env(
      bench, {},
      {"--server", broker.address(), "--token-file", "/nonexistent"});
  EXPECT_EQ(bad, 2) << bad_out;
  EXPECT_NE(bad_out.find("tinybroker-bench: cannot read token file "
                         "\"/nonexistent\""),
            std::string::npos)
      << bad_out;
}

TEST(ToolsAuth, CliBenchHandsItsSecuritySettingsToTheBench) {
  fake_broker broker{wanting_token()};
  auto args = idle_run();
  args.insert(args.begin(), {"--token", good_token, "bench"});
  auto [code, out] =
      run_cli(broker.address(), {"TINYBROKER_TOKEN=wrong"}, args);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find(good_token), std::string::npos) << out;
  EXPECT_EQ(calls_with(broker, "/Session", good_bearer), 2);
}

TEST(ToolsAuth, PythonExampleSendsTheTokenOnUnaryCallsAndStreams) {
  fake_broker broker{wanting_token()};
  auto file = write_temp_file(good_token + "\n", ".token");
  auto [pub, pub_out] =
      run_with_env(TINYBROKER_PYTHON3, python_env({}),
                   python({"--server", broker.address(), "--token", good_token,
                           "publish", "jobs.resize", "a"}));
  EXPECT_EQ(pub, 0) << pub_out;
  auto [work, work_out] = run_with_env(
      TINYBROKER_PYTHON3, python_env({"TINYBROKER_TOKEN_FILE=" + file}),
      python(
          {"--server", broker.address(), "worker", "g", "forbidden.>", "1"}));
  EXPECT_EQ(work, 1) << work_out;
  EXPECT_NE(work_out.find("refused (7)"), std::string::npos) << work_out;
  EXPECT_EQ(calls_with(broker, "/Publish", good_bearer), 1);
  EXPECT_EQ(calls_with(broker, "/Session", good_bearer), 1);
  auto [none, none_out] = run_with_env(
      TINYBROKER_PYTHON3, python_env({}),
      python({"--server", broker.address(), "publish", "jobs.resize", "a"}));
  EXPECT_EQ(none, 1) << none_out;
  EXPECT_NE(none_out.find("publish failed: UNAUTHENTICATED"), std::string::npos)
      << none_out;
}

TEST(ToolsAuth, PythonExampleSpeaksMutualTlsFromFlagsOrVariables) {
  auto certs = make_fake_pki();
  fake_broker_options options = wanting_token();
  options.tls = true;
  options.certs = certs;
  options.require_client_cert = true;
  fake_broker broker{options};
  auto [flags, flags_out] = run_with_env(
      TINYBROKER_PYTHON3, python_env({}),
      python({"--server", broker.localhost_address(), "--token", good_token,
              "--ca", certs.ca, "--cert", certs.client_cert, "--key",
              certs.client_key, "publish", "jobs.resize", "a"}));
  EXPECT_EQ(flags, 0) << flags_out;
  auto [env, env_out] =
      run_with_env(TINYBROKER_PYTHON3,
                   python_env({"TINYBROKER_CA=" + certs.ca,
                               "TINYBROKER_CERT=" + certs.client_cert,
                               "TINYBROKER_KEY=" + certs.client_key,
                               "TINYBROKER_TOKEN=" + good_token}),
                   python({"--server", broker.localhost_address(), "publish",
                           "jobs.resize", "a"}));
  EXPECT_EQ(env, 0) << env_out;
  EXPECT_EQ(calls_with(broker, "/Publish", good_bearer), 2);
  for (auto& call : broker.calls())
    EXPECT_EQ(call.client_cn, "client-a");
  auto [bad, bad_out] = run_with_env(
      TINYBROKER_PYTHON3, python_env({}),
      python({"--server", broker.localhost_address(), "--ca",
              "/nonexistent/ca.pem", "publish", "jobs.resize", "a"}));
  EXPECT_NE(bad, 0);
  EXPECT_NE(bad_out.find("cannot read CA file \"/nonexistent/ca.pem\""),
            std::string::npos)
      << bad_out;
}

TEST(ToolsAuth, CppExamplesTakeTheTokenFromTheEnvironment) {
  fake_broker broker{wanting_token()};
  auto example = std::string{TINYBROKER_EXAMPLES_DIR} + "/publish_subscribe";
  std::vector<std::string> args{"--server", broker.address(), "pub",
                                "orders.eu", "hello"};
  auto [code, out] =
      run_with_env(example, {"TINYBROKER_TOKEN=" + good_token}, args);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("published #1"), std::string::npos) << out;
  EXPECT_GE(calls_with(broker, "/Session", good_bearer), 1);
  auto [bad, bad_out] =
      run_with_env(example, {"TINYBROKER_CA=/nonexistent/ca.pem"}, args);
  EXPECT_EQ(bad, 2) << bad_out;
  EXPECT_NE(bad_out.find("publish_subscribe: cannot read CA file"),
            std::string::npos)
      << bad_out;
}

} // namespace
} // namespace tb::test
