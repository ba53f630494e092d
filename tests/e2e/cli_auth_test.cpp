// tinybroker-cli's token and TLS flags and variables, run as a real process
// against the stand-in broker: what arrives, which source wins, the usage
// errors, the broker's refusals, and that the token is never printed.

#include <string>

#include <gtest/gtest.h>

#include "auth_tools.hpp"

namespace tb::test {
namespace {

// Returns true if `out` contains `text`.
bool has(const std::string& out, const std::string& text) {
  return out.find(text) != std::string::npos;
}

TEST(CliAuth, PubStatsGroupsAndSubSendTheToken) {
  fake_broker broker{wanting_token()};
  auto file = write_temp_file(good_token + "\n", ".token");
  auto address = broker.address();
  auto [pub, pub_out] =
      run_cli(address, {}, {"--token", good_token, "pub", "orders.eu", "x"});
  EXPECT_EQ(pub, 0) << pub_out;
  auto [stats, stats_out] =
      run_cli(address, {}, {"--token-file", file, "stats"});
  EXPECT_EQ(stats, 0) << stats_out;
  auto [ls, ls_out] =
      run_cli(address, {"TINYBROKER_TOKEN=" + good_token}, {"groups", "ls"});
  EXPECT_EQ(ls, 0) << ls_out;
  auto [sub, sub_out] = run_cli(address, {"TINYBROKER_TOKEN_FILE=" + file},
                                {"sub", "forbidden.>"});
  EXPECT_EQ(sub, 1) << sub_out;
  EXPECT_TRUE(has(sub_out, "refused: PERMISSION_DENIED: fake broker: pattern "
                           "not allowed"))
      << sub_out;
  for (auto* method : {"/Publish", "/Stats", "/ListGroups", "/Session"})
    EXPECT_EQ(calls_with(broker, method, good_bearer), 1) << method;
}

TEST(CliAuth, AFlagBeatsItsVariable) {
  fake_broker broker{wanting_token()};
  auto good_file = write_temp_file(good_token + "\n", ".token");
  auto bad_file = write_temp_file("env-token\n", ".token");
  auto pub = [&](std::vector<std::string> env, std::vector<std::string> args) {
    args.insert(args.end(), {"pub", "orders.eu", "x"});
    return run_cli(broker.address(), env, args);
  };
  EXPECT_EQ(pub({"TINYBROKER_TOKEN=env-token"}, {"--token", good_token}).first,
            0);
  EXPECT_EQ(
      pub({"TINYBROKER_TOKEN=env-token"}, {"--token-file", good_file}).first,
      0);
  EXPECT_EQ(
      pub({"TINYBROKER_TOKEN_FILE=" + bad_file}, {"--token", good_token}).first,
      0);
  EXPECT_EQ(pub({"TINYBROKER_TOKEN=env-token"}, {}).first, 1);
  EXPECT_EQ(calls_with(broker, "/Publish", good_bearer), 3);
  EXPECT_EQ(calls_with(broker, "/Publish", "Bearer env-token"), 1);
}

TEST(CliAuth, TheBrokersRefusalIsPrintedWithTheRefusalExitCode) {
  fake_broker broker{wanting_token()};
  auto address = broker.address();
  auto [pub, pub_out] = run_cli(address, {}, {"pub", "orders.eu", "x"});
  EXPECT_EQ(pub, 1) << pub_out;
  EXPECT_TRUE(has(pub_out, "tinybroker-cli: publish failed: UNAUTHENTICATED: "
                           "fake broker: missing or wrong token"))
      << pub_out;
  auto [ls, ls_out] = run_cli(address, {}, {"groups", "ls"});
  EXPECT_EQ(ls, 1) << ls_out;
  EXPECT_TRUE(has(ls_out, "UNAUTHENTICATED: fake broker: missing or wrong "
                          "token"))
      << ls_out;
  auto [sub, sub_out] = run_cli(address, {}, {"sub", "orders.>"});
  EXPECT_EQ(sub, 1) << sub_out;
  EXPECT_TRUE(has(sub_out, "tinybroker-cli: refused: UNAUTHENTICATED: fake "
                           "broker: missing or wrong token"))
      << sub_out;
}

TEST(CliAuth, TheTokenIsNeverPrinted) {
  fake_broker broker{wanting_token()};
  std::string secret = "WRONG-secret-123";
  auto file = write_temp_file(secret, ".token");
  std::vector<std::pair<int, std::vector<std::string>>> runs{
      {1, {"--token", secret, "pub", "orders.eu", "x"}},
      {1, {"--json", "--token", secret, "pub", "orders.eu", "x"}},
      {1, {"--token", secret, "--json", "stats"}},
      {1, {"--token", secret, "sub", "orders.>"}},
      {2, {"--token", secret, "--token-file", file, "stats"}},
      {2, {"--token", secret, "--cert", file, "stats"}},
      {0, {"--token", secret, "pub", "--help"}},
  };
  for (auto& [expected, args] : runs) {
    auto [code, out] = run_cli(broker.address(), {}, args);
    EXPECT_EQ(code, expected) << out;
    EXPECT_FALSE(has(out, secret)) << out;
  }
  auto [code, out] =
      run_cli(broker.address(), {"TINYBROKER_TOKEN=" + secret}, {"stats"});
  EXPECT_EQ(code, 1);
  EXPECT_FALSE(has(out, secret)) << out;
}

TEST(CliAuth, BadSecuritySettingsAreUsageErrors) {
  fake_broker broker;
  auto token = write_temp_file("t\n", ".token");
  auto not_pem = write_temp_file("hello\n", ".pem");
  struct bad_case {
    std::vector<std::string> env;
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<bad_case> cases{
      {{},
       {"--token-file", "/nonexistent/t"},
       "tinybroker-cli: cannot read token file \"/nonexistent/t\": No such "
       "file or directory\n"},
      {{"TINYBROKER_TOKEN_FILE=/nonexistent/t"},
       {},
       "tinybroker-cli: cannot read token file"},
      {{}, {"--token", "a", "--token-file", token}, "--token excludes"},
      {{"TINYBROKER_TOKEN=a", "TINYBROKER_TOKEN_FILE=" + token},
       {},
       "tinybroker-cli: TINYBROKER_TOKEN and TINYBROKER_TOKEN_FILE are both "
       "set; use one\n"},
      {{},
       {"--cert", not_pem},
       "tinybroker-cli: a client certificate (--cert, TINYBROKER_CERT) needs "
       "its key (--key, TINYBROKER_KEY)\n"},
      {{}, {"--key", not_pem}, "tinybroker-cli: a client key (--key"},
      {{},
       {"--ca", "/nonexistent/ca.pem"},
       "tinybroker-cli: cannot read CA file \"/nonexistent/ca.pem\": No such "
       "file or directory\n"},
      {{"TINYBROKER_CA=" + not_pem},
       {},
       "tinybroker-cli: CA file \"" + not_pem + "\" is not PEM"},
      {{},
       {"--tls-server-name", "localhost"},
       "tinybroker-cli: a TLS server name"},
  };
  for (auto& c : cases) {
    auto args = c.args;
    args.insert(args.end(), {"pub", "orders.eu", "x"});
    auto [code, out] = run_cli(broker.address(), c.env, args);
    EXPECT_EQ(code, 2) << out;
    EXPECT_TRUE(has(out, c.message)) << c.message << " not in:\n" << out;
  }
  EXPECT_TRUE(broker.calls().empty());
}

TEST(CliAuth, TlsAndMutualTlsFromFlagsOrVariables) {
  auto certs = make_fake_pki();
  fake_broker_options options = wanting_token();
  options.tls = true;
  options.certs = certs;
  options.require_client_cert = true;
  fake_broker broker{options};
  std::vector<std::string> token{"--token", good_token};
  auto pub = [&](std::vector<std::string> env, std::vector<std::string> args) {
    args.insert(args.end(), {"--timeout", "2s", "pub", "orders.eu", "x"});
    return run_cli(broker.localhost_address(), env, args);
  };
  auto [flags, flags_out] =
      pub({}, {"--token", good_token, "--ca", certs.ca, "--cert",
               certs.client_cert, "--key", certs.client_key});
  EXPECT_EQ(flags, 0) << flags_out;
  auto [env, env_out] = pub(
      {"TINYBROKER_CA=" + certs.ca, "TINYBROKER_CERT=" + certs.client_cert,
       "TINYBROKER_KEY=" + certs.client_key, "TINYBROKER_TOKEN=" + good_token},
      {});
  EXPECT_EQ(env, 0) << env_out;
  auto [no_cert, no_cert_out] =
      pub({"TINYBROKER_TOKEN=" + good_token}, {"--ca", certs.ca});
  EXPECT_EQ(no_cert, 3) << no_cert_out;
  EXPECT_TRUE(has(no_cert_out, "over TLS")) << no_cert_out;
  int total = 0;
  EXPECT_EQ(calls_with(broker, "/Publish", good_bearer, &total), 2);
  EXPECT_EQ(total, 2);
  for (auto& call : broker.calls())
    EXPECT_EQ(call.client_cn, "client-a");
}

} // namespace
} // namespace tb::test
