// End to end: what a real broker checks and says at start about TLS: bad
// `[tls]` files stop it with exit status 2 and one line naming the file;
// listeners reachable from other hosts without TLS or auth are warned of.

#include <csignal>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_fixture.hpp"
#include "tls_fixture.hpp"

namespace tb::test {
namespace {

// Returns the lines of `text` that contain `part`.
std::vector<std::string> lines_with(const std::string& text,
                                    const std::string& part) {
  std::vector<std::string> result;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    if (line.find(part) != std::string::npos)
      result.push_back(line);
  return result;
}

// Writes a config whose [tls] names the paths `cert` and `key` as given.
std::string config_with_paths(const std::string& cert, const std::string& key) {
  return write_temp_file(
      "[tls]\ncert = \"" + cert + "\"\nkey = \"" + key + "\"\n", ".toml");
}

// Runs the broker on `config` and expects exit status 2 with exactly the
// line `tinybroker: LINE`, and nothing started.
void expect_refused_start(const std::string& config, const std::string& line) {
  for (auto flag : {"--config", "--check-config"}) {
    auto [code, out] = run_broker_command({flag, config});
    EXPECT_EQ(code, 2) << flag << ": " << out;
    EXPECT_EQ(out, "tinybroker: " + line + "\n") << flag;
  }
}

TEST(TlsStartTest, AMissingKeyFileStopsTheStart) {
  const auto& certs = shared_test_certs();
  auto key = certs.path("no-such.key");
  expect_refused_start(config_with_paths(certs.path("server.crt"), key),
                       "tls: cannot read key " + key +
                           ": No such file or directory");
}

TEST(TlsStartTest, AMissingClientCaFileStopsTheStart) {
  auto config = tls_config_file("server.crt", "server.key", "none-ca.crt");
  expect_refused_start(config, "tls: cannot read client_ca " +
                                   shared_test_certs().path("none-ca.crt") +
                                   ": No such file or directory");
}

TEST(TlsStartTest, AFileWithoutPemCertificateStopsTheStart) {
  auto not_pem = write_temp_file("just text\n", ".pem");
  expect_refused_start(
      config_with_paths(not_pem, shared_test_certs().path("server.key")),
      "tls: " + not_pem + " holds no PEM certificate");
  // A key where the certificate belongs is no certificate either.
  auto key = shared_test_certs().path("server.key");
  expect_refused_start(config_with_paths(key, key),
                       "tls: " + key + " holds no PEM certificate");
}

TEST(TlsStartTest, AFileWithoutPemKeyStopsTheStart) {
  auto cert = shared_test_certs().path("server.crt");
  expect_refused_start(config_with_paths(cert, cert),
                       "tls: " + cert +
                           " holds no PEM private key (or an encrypted one)");
}

TEST(TlsStartTest, AClientCaWithoutCertificateStopsTheStart) {
  auto ca = write_temp_file("", ".pem");
  const auto& certs = shared_test_certs();
  auto config = write_temp_file("[tls]\ncert = \"" + certs.path("server.crt") +
                                    "\"\nkey = \"" + certs.path("server.key") +
                                    "\"\nclient_ca = \"" + ca + "\"\n",
                                ".toml");
  expect_refused_start(config, "tls: " + ca + " holds no PEM certificate");
}

TEST(TlsStartTest, AKeyThatDoesNotMatchTheCertificateStopsTheStart) {
  const auto& certs = shared_test_certs();
  expect_refused_start(
      config_with_paths(certs.path("server.crt"), certs.path("client.key")),
      "tls: key " + certs.path("client.key") +
          " does not match the certificate " + certs.path("server.crt"));
}

TEST(TlsStartTest, GoodFilesPassTheCheck) {
  auto [code, out] = run_broker_command(
      {"--check-config",
       tls_config_file("server.crt", "server.key", "ca.crt")});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("(mutual TLS)"), std::string::npos) << out;
}

// Starts a broker with `args` on its own address (none is added), waits
// until it listens, stops it and returns its WARN lines.
std::vector<std::string> warnings_of(std::vector<std::string> args) {
  broker_process broker{std::move(args), broker_process::default_listen};
  EXPECT_TRUE(broker.wait_ready()) << broker.output();
  EXPECT_EQ(broker.stop(SIGTERM), 0) << broker.output();
  return lines_with(broker.output(), " WARN ");
}

// Returns true if one of `lines` contains every one of `parts`.
bool has_line(const std::vector<std::string>& lines,
              std::initializer_list<std::string> parts) {
  for (auto& line : lines) {
    bool all = true;
    for (auto& part : parts)
      all = all && line.find(part) != std::string::npos;
    if (all)
      return true;
  }
  return false;
}

TEST(TlsStartTest, ExposedListenersWithoutTlsOrAuthAreWarnedOf) {
  auto warnings =
      warnings_of({"--listen", "0.0.0.0:0", "--metrics-listen", "0.0.0.0:0"});
  ASSERT_EQ(warnings.size(), 3u) << ::testing::PrintToString(warnings);
  EXPECT_TRUE(has_line(warnings, {"the gRPC listener 0.0.0.0:0 is not on "
                                  "loopback and has no TLS: traffic and "
                                  "tokens travel in clear text"}));
  EXPECT_TRUE(has_line(warnings, {"the metrics listener 0.0.0.0:0 is not on "
                                  "loopback and has no TLS: scrapes travel "
                                  "in clear text"}));
  EXPECT_TRUE(has_line(warnings, {"auth is off: anyone who reaches 0.0.0.0:0 "
                                  "may publish, subscribe and delete "
                                  "groups"}));
}

TEST(TlsStartTest, TlsSilencesTheClearTextWarningsButNotTheAuthOne) {
  auto warnings =
      warnings_of({"--config", tls_config_file("server.crt", "server.key"),
                   "--listen", "0.0.0.0:0", "--metrics-listen", "0.0.0.0:0"});
  ASSERT_EQ(warnings.size(), 1u) << ::testing::PrintToString(warnings);
  EXPECT_TRUE(has_line(warnings, {"auth is off: anyone who reaches"}));
}

TEST(TlsStartTest, TlsAndAuthSilenceEveryWarning) {
  auto config = tls_config_file(
      "server.crt", "server.key", {},
      "[auth]\n[[auth.tokens]]\nname = \"t\"\nsecret_sha256 = \"" +
          std::string(64, 'a') + "\"\npublish = [\">\"]\n");
  auto warnings = warnings_of({"--config", config, "--listen", "0.0.0.0:0",
                               "--metrics-listen", "0.0.0.0:0"});
  EXPECT_TRUE(warnings.empty()) << ::testing::PrintToString(warnings);
}

TEST(TlsStartTest, PlainMetricsBesideTlsAreWarnedOf) {
  auto config = tls_config_file("server.crt", "server.key", {},
                                "[metrics]\ntls = false\n");
  auto warnings = warnings_of({"--config", config, "--listen", "127.0.0.1:0",
                               "--metrics-listen", "0.0.0.0:0"});
  ASSERT_EQ(warnings.size(), 1u) << ::testing::PrintToString(warnings);
  EXPECT_TRUE(
      has_line(warnings, {"the metrics listener 0.0.0.0:0", "clear text"}));
}

TEST(TlsStartTest, LoopbackListenersAreNotWarnedOf) {
  for (auto address : {"127.0.0.1:0", "[::1]:0", "localhost:0"}) {
    auto warnings =
        warnings_of({"--listen", address, "--metrics-listen", "127.0.0.2:0"});
    EXPECT_TRUE(warnings.empty())
        << address << ": " << ::testing::PrintToString(warnings);
  }
}

} // namespace
} // namespace tb::test
