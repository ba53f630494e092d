// End to end (issue 26, point 8): each way a TLS connection fails is named
// by its likely cause, by tinybroker-cli and by the C++ client library
// (client/tls_diagnosis.hpp); no raw gRPC log line reaches the terminal;
// a client key that does not belong to its certificate is refused before
// any connection.

#include <algorithm>
#include <csignal>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "client/async_client.hpp"
#include "client/connection.hpp"
#include "client/tls_diagnosis.hpp"
#include "e2e_fixture.hpp"
#include "tls_fixture.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;

// Returns the path of test file `name`.
std::string cert(const std::string& name) {
  return shared_test_certs().path(name);
}

// Runs `program` with `args`, with none of the TINYBROKER_* variables of
// the test's environment nor GRPC_VERBOSITY, and with `env` ("NAME=VALUE"
// each) set; returns the exit code and the output (standard output and
// error).
std::pair<int, std::string> run_clean(const std::string& program,
                                      const std::vector<std::string>& env,
                                      const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  for (auto* name :
       {"TINYBROKER_TOKEN", "TINYBROKER_TOKEN_FILE", "TINYBROKER_CA",
        "TINYBROKER_CERT", "TINYBROKER_KEY", "TINYBROKER_TLS_SERVER_NAME",
        "TINYBROKER_SERVER", "GRPC_VERBOSITY"})
    argv.insert(argv.end(), {"-u", name});
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(program);
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command("/usr/bin/env", argv);
}

// Runs `tinybroker-cli --server SERVER --timeout 5s FLAGS... health` (see
// `run_clean`).
std::pair<int, std::string>
cli_health(const std::string& server, const std::vector<std::string>& flags,
           const std::vector<std::string>& env = {}) {
  std::vector<std::string> args{"--server", server, "--timeout", "5s"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("health");
  return run_clean(std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-cli", env,
                   args);
}

// Expects `output` to hold no line written by gRPC itself: neither its
// "E1204 12:00:00.000000000 ..." form nor the text of its handshake and
// channel set-up lines.
void expect_no_raw_grpc_line(const std::string& output) {
  static const std::regex raw{R"((^|\n)[EIDW]\d{4} \d\d:\d\d:\d\d\.\d+)"};
  EXPECT_FALSE(std::regex_search(output, raw)) << output;
  EXPECT_EQ(output.find("ssl_transport_security"), std::string::npos) << output;
  EXPECT_EQ(output.find("Failed to create channel args"), std::string::npos)
      << output;
  EXPECT_EQ(output.find("client_channel_factory"), std::string::npos) << output;
}

// Expects the CLI's answer `got` to be exit code 3 with one line that
// names `cause`, and no raw gRPC line.
void expect_cause(const std::pair<int, std::string>& got,
                  const std::string& cause) {
  EXPECT_EQ(got.first, 3) << got.second;
  EXPECT_NE(got.second.find(cause), std::string::npos) << got.second;
  EXPECT_EQ(std::count(got.second.begin(), got.second.end(), '\n'), 1)
      << got.second;
  expect_no_raw_grpc_line(got.second);
}

// Returns the status of a unary publish through the C++ client library to
// `server` with `security`.
grpc::Status library_publish(const std::string& server,
                             const client::security_options& security) {
  client::connection conn{server, security};
  std::vector<pb::PublishResult> results;
  return conn.publish({{"tls.check", "x", {}, {}}}, &results,
                      std::chrono::seconds(5));
}

// Returns the final status of an async_client to `server` with `security`
// that gives up after its first failed attempt (wait_closed), and checks
// that on_error got the same once.
grpc::Status async_give_up(const std::string& server,
                           const client::security_options& security) {
  client::client_options options;
  options.security = security;
  options.reconnect_max_attempts = 1;
  options.reconnect_max_backoff = std::chrono::milliseconds(500);
  std::mutex mutex;
  std::vector<grpc::Status> errors;
  options.on_error = [&](const grpc::Status& status) {
    std::lock_guard<std::mutex> guard{mutex};
    errors.push_back(status);
  };
  client::async_client client{server, options};
  auto status = client.wait_closed(std::chrono::seconds(30));
  std::lock_guard<std::mutex> guard{mutex};
  EXPECT_EQ(errors.size(), 1u);
  if (!errors.empty()) {
    EXPECT_EQ(errors[0].error_message(), status.error_message());
  }
  return status;
}

// Expects the async_client's final `status` to be its give-up naming
// `cause`.
void expect_give_up_names(const grpc::Status& status,
                          const std::string& cause) {
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("gave up after 1 failed attempt "),
            std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find(cause), std::string::npos)
      << status.error_message();
}

// Returns security settings with test files `ca`, `client` (`client.crt`
// and `client.key` for "client"; none if empty).
client::security_options tls_files(const std::string& ca,
                                   const std::string& client = {}) {
  client::security_options security;
  security.ca_file = cert(ca);
  if (!client.empty()) {
    security.cert_file = cert(client + ".crt");
    security.key_file = cert(client + ".key");
  }
  return security;
}

/// A broker with TLS, server certificate only.
class TlsErrorsTest : public ::testing::Test {
protected:
  void SetUp() override {
    broker_ = started_broker(
        {"--config", tls_config_file("server.crt", "server.key")});
    server_ = "localhost:" + port_of(broker_->address());
  }

  void TearDown() override {
    EXPECT_EQ(broker_->stop(SIGTERM), 0) << broker_->output();
  }

  std::unique_ptr<broker_process> broker_;
  std::string server_;
};

TEST_F(TlsErrorsTest, APlaintextClientIsToldTheBrokerSpeaksTls) {
  expect_cause(cli_health(server_, {}), "the broker speaks TLS there");
  auto status = library_publish(server_, {});
  EXPECT_NE(status.error_message().find("the broker speaks TLS there"),
            std::string::npos)
      << status.error_message();
}

TEST_F(TlsErrorsTest, AWrongCaIsNamed) {
  auto got = cli_health(server_, {"--ca", cert("other-ca.crt")});
  expect_cause(got, "the broker's certificate is not trusted: it is not "
                    "signed by the CA in \"" +
                        cert("other-ca.crt") + "\"");
  auto status = library_publish(server_, tls_files("other-ca.crt"));
  EXPECT_NE(status.error_message().find("is not trusted"), std::string::npos)
      << status.error_message();
}

// Issue 26, point 8 for the async_client: its give-up names the cause.
TEST_F(TlsErrorsTest, TheAsyncClientsGiveUpNamesAWrongCa) {
  expect_give_up_names(async_give_up(server_, tls_files("other-ca.crt")),
                       "the broker's certificate is not trusted: it is not "
                       "signed by the CA in \"" +
                           cert("other-ca.crt") + "\"");
}

TEST_F(TlsErrorsTest, TheAsyncClientsGiveUpNamesAPlaintextClient) {
  expect_give_up_names(async_give_up(server_, {}),
                       "the broker speaks TLS there");
}

TEST_F(TlsErrorsTest, ANameMismatchIsNamed) {
  expect_cause(cli_health(server_, {"--ca", cert("ca.crt"), "--tls-server-name",
                                    "broker.example"}),
               "the broker's certificate does not carry the name "
               "\"broker.example\"");
}

TEST_F(TlsErrorsTest, TheBenchAndTheExamplesNameTheCauseWithoutRawGrpcLines) {
  const std::string cause = "the broker's certificate is not trusted";
  auto [bench, bench_out] = run_clean(
      std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-bench", {},
      {"--server", server_, "--ca", cert("other-ca.crt"), "--messages", "10"});
  EXPECT_EQ(bench, 2) << bench_out;
  EXPECT_NE(bench_out.find("tinybroker-bench: cannot connect to the broker "
                           "at " +
                           server_ + " over TLS: " + cause),
            std::string::npos)
      << bench_out;
  expect_no_raw_grpc_line(bench_out);
  auto [example, example_out] =
      run_clean(std::string{TINYBROKER_EXAMPLES_DIR} + "/publish_subscribe",
                {"TINYBROKER_CA=" + cert("other-ca.crt")},
                {"--server", server_, "pub", "tls.x", "hello"});
  EXPECT_EQ(example, 3) << example_out;
  EXPECT_NE(example_out.find("publish_subscribe: cannot connect to the "
                             "broker at " +
                             server_ + " over TLS: " + cause),
            std::string::npos)
      << example_out;
  expect_no_raw_grpc_line(example_out);
  auto [python, python_out] =
      run_clean(TINYBROKER_PYTHON3, {"PYTHONPATH=" TINYBROKER_PYTHON_GEN_DIR},
                {TINYBROKER_PYTHON_EXAMPLE, "--server", server_, "--ca",
                 cert("other-ca.crt"), "publish", "tls.x", "hello"});
  EXPECT_NE(python, 0) << python_out;
  EXPECT_NE(python_out.find(cause), std::string::npos) << python_out;
  expect_no_raw_grpc_line(python_out);
}

TEST_F(TlsErrorsTest, GrpcVerbositySetShowsGrpcLinesThroughTheProgram) {
  auto got = cli_health(server_, {"--ca", cert("other-ca.crt")},
                        {"GRPC_VERBOSITY=ERROR"});
  EXPECT_EQ(got.first, 3) << got.second;
  EXPECT_NE(got.second.find("tinybroker-cli: grpc: Handshake failed"),
            std::string::npos)
      << got.second;
  static const std::regex raw{R"((^|\n)[EIDW]\d{4} \d\d:\d\d:\d\d\.\d+)"};
  EXPECT_FALSE(std::regex_search(got.second, raw)) << got.second;
}

TEST(TlsErrorsPlainTest, ATlsClientAtAPlainPortIsToldItDoesNotSpeakTls) {
  auto broker = started_broker({});
  auto server = "localhost:" + port_of(broker->address());
  expect_cause(cli_health(server, {"--ca", cert("ca.crt")}),
               "the broker does not speak TLS there");
  auto status = library_publish(server, tls_files("ca.crt"));
  EXPECT_NE(status.error_message().find("does not speak TLS"),
            std::string::npos)
      << status.error_message();
  EXPECT_EQ(broker->stop(SIGTERM), 0) << broker->output();
}

TEST(TlsErrorsExpiredServerTest, AnExpiredServerCertificateIsNamed) {
  auto broker =
      started_broker({"--config", tls_config_file("expired-server.crt",
                                                  "expired-server.key")});
  auto server = "localhost:" + port_of(broker->address());
  expect_cause(cli_health(server, {"--ca", cert("ca.crt")}),
               "the broker's certificate has expired");
  EXPECT_EQ(broker->stop(SIGTERM), 0) << broker->output();
}

/// A broker with mutual TLS: client certificates from ca.crt required.
class MutualTlsErrorsTest : public TlsErrorsTest {
protected:
  void SetUp() override {
    broker_ = started_broker(
        {"--config", tls_config_file("server.crt", "server.key", "ca.crt")});
    server_ = "localhost:" + port_of(broker_->address());
  }
};

TEST_F(MutualTlsErrorsTest, AMissingClientCertificateIsNamed) {
  expect_cause(cli_health(server_, {"--ca", cert("ca.crt")}),
               "the broker requires a client certificate");
  auto status = library_publish(server_, tls_files("ca.crt"));
  EXPECT_NE(status.error_message().find("requires a client certificate"),
            std::string::npos)
      << status.error_message();
}

TEST_F(MutualTlsErrorsTest, TheAsyncClientsGiveUpNamesAMissingCertificate) {
  expect_give_up_names(async_give_up(server_, tls_files("ca.crt")),
                       "the broker requires a client certificate");
}

TEST_F(MutualTlsErrorsTest, TheAsyncClientsGiveUpNamesAForeignCertificate) {
  expect_give_up_names(
      async_give_up(server_, tls_files("ca.crt", "other-client")),
      "the broker refused the client certificate \"" +
          cert("other-client.crt") + "\": it is issued by");
}

TEST_F(MutualTlsErrorsTest, AnExpiredClientCertificateIsNamed) {
  expect_cause(cli_health(server_, {"--ca", cert("ca.crt"), "--cert",
                                    cert("expired-client.crt"), "--key",
                                    cert("expired-client.key")}),
               "the broker refused the client certificate \"" +
                   cert("expired-client.crt") + "\": it expired on");
}

TEST_F(MutualTlsErrorsTest, AClientCertificateFromAnotherCaIsNamed) {
  auto got = cli_health(server_, {"--ca", cert("ca.crt"), "--cert",
                                  cert("other-client.crt"), "--key",
                                  cert("other-client.key")});
  expect_cause(got, "the broker refused the client certificate \"" +
                        cert("other-client.crt") +
                        "\": it is issued by \"CN=unrelated test "
                        "CA,O=tinybroker-other\", and the broker accepts "
                        "client certificates issued by \"CN=tinybroker test "
                        "CA,O=tinybroker-test\" only");
  auto status = library_publish(server_, tls_files("ca.crt", "other-client"));
  EXPECT_NE(status.error_message().find("refused the client certificate"),
            std::string::npos)
      << status.error_message();
}

TEST_F(MutualTlsErrorsTest, AValidClientCertificateStillConnects) {
  auto [code, output] =
      cli_health(server_, {"--ca", cert("ca.crt"), "--cert", cert("client.crt"),
                           "--key", cert("client.key")});
  EXPECT_EQ(code, 0) << output;
}

TEST(TlsKeyPairTest, AKeyThatIsNotTheCertificatesIsRefusedBeforeConnecting) {
  // Nothing listens at port 1: the refusal comes before any connection.
  auto [code, output] = cli_health(
      "127.0.0.1:1", {"--ca", cert("ca.crt"), "--cert", cert("client.crt"),
                      "--key", cert("other-client.key")});
  EXPECT_EQ(code, 2) << output;
  EXPECT_EQ(output, "tinybroker-cli: the client key \"" +
                        cert("other-client.key") +
                        "\" does not belong to the certificate \"" +
                        cert("client.crt") +
                        "\" (--cert and --key, TINYBROKER_CERT and "
                        "TINYBROKER_KEY, must be a pair)\n");
  auto security = tls_files("ca.crt", "client");
  security.key_file = cert("other-client.key");
  EXPECT_THROW(client::connection("127.0.0.1:1", security),
               client::security_error);
  security.key_file = cert("client.key");
  EXPECT_NO_THROW(client::make_channel_credentials(security));
}

TEST(TlsClassifyTest, GrpcMessagesOfEachCase) {
  using client::classify_grpc_message;
  using client::connect_cause;
  // The texts gRPC 1.51 gives (issue 26's notes).
  const std::string head =
      "failed to connect to all addresses; last error: UNKNOWN: "
      "ipv4:127.0.0.1:7400: ";
  EXPECT_EQ(classify_grpc_message(
                head + "Ssl handshake failed: SSL_ERROR_SSL: "
                       "error:0A000086:SSL routines::certificate verify "
                       "failed"),
            connect_cause::server_not_trusted);
  EXPECT_EQ(classify_grpc_message(
                head + "Peer name x.example is not in peer certificate"),
            connect_cause::name_mismatch);
  EXPECT_EQ(classify_grpc_message(
                head + "Ssl handshake failed: SSL_ERROR_SSL: "
                       "error:0A00010B:SSL routines::wrong version number"),
            connect_cause::server_not_tls);
  EXPECT_EQ(classify_grpc_message(
                head + "Failed to connect to remote host: Connection refused"),
            connect_cause::refused);
  EXPECT_EQ(classify_grpc_message("failed to connect to all addresses; last "
                                  "error: UNAVAILABLE: ipv4:127.0.0.1:7400: "
                                  "Socket closed"),
            connect_cause::unknown);
}

} // namespace
} // namespace tb::test
