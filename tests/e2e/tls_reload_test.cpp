// End to end: renewing the certificate of a running broker (issue 26). After
// the `[tls]` files are replaced and SIGHUP sent, new gRPC and HTTPS
// handshakes get the new certificate while an open stream keeps going; a
// file that does not load changes nothing and is logged; a certificate near
// its expiry is warned of; the expiry is on /metrics; client certificates
// refused are logged with their reason; `tinybroker-cli info` names the
// metrics URL with its scheme.

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "auth_fixture.hpp"
#include "e2e_fixture.hpp"
#include "tls_fixture.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;
namespace fs = std::filesystem;
using kind = pb::ServerFrame::KindCase;

// Returns the notAfter of the test certificate `name` in Unix seconds.
int64_t not_after_of(const std::string& name) {
  auto pem = shared_test_certs().read(name);
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  std::tm tm{};
  EXPECT_EQ(ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm), 1);
  X509_free(cert);
  return static_cast<int64_t>(timegm(&tm));
}

// Calls Info on `channel` and returns the subject of the certificate the
// server presented (RFC 2253), or "" if the call failed.
std::string served_subject(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = pb::Broker::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + patience);
  pb::InfoRequest request;
  pb::InfoReply reply;
  if (!stub->Info(&ctx, request, &reply).ok())
    return {};
  auto auth = ctx.auth_context();
  auto values = auth ? auth->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME)
                     : std::vector<grpc::string_ref>{};
  return values.empty() ? std::string{}
                        : std::string(values[0].data(), values[0].size());
}

// Scrapes /metrics at `address` over HTTPS with the test client
// certificate; returns the body, or "" if the scrape failed.
std::string scrape(const std::string& address) {
  const auto& certs = shared_test_certs();
  httplib::SSLClient scraper{"localhost", std::stoi(port_of(address)),
                             certs.path("client.crt"),
                             certs.path("client.key")};
  scraper.set_ca_cert_path(certs.path("ca.crt"));
  scraper.enable_server_certificate_verification(true);
  scraper.set_connection_timeout(10, 0);
  scraper.set_read_timeout(10, 0);
  auto res = scraper.Get("/metrics");
  return res && res->status == 200 ? res->body : std::string{};
}

// Returns the subject of the certificate the HTTPS listener at `address`
// serves in a new handshake (OpenSSL's one-line form, e.g.
// "/CN=renewed/O=tinybroker-test"), or "" if the handshake fails.
std::string https_subject(const std::string& address) {
  const auto& certs = shared_test_certs();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{
      SSL_CTX_new(TLS_client_method()), SSL_CTX_free};
  SSL_CTX_use_certificate_file(ctx.get(), certs.path("client.crt").c_str(),
                               SSL_FILETYPE_PEM);
  SSL_CTX_use_PrivateKey_file(ctx.get(), certs.path("client.key").c_str(),
                              SSL_FILETYPE_PEM);
  std::unique_ptr<BIO, decltype(&BIO_free_all)> bio{
      BIO_new_ssl_connect(ctx.get()), BIO_free_all};
  BIO_set_conn_hostname(bio.get(), address.c_str());
  if (BIO_do_connect(bio.get()) <= 0 || BIO_do_handshake(bio.get()) <= 0)
    return {};
  SSL* ssl = nullptr;
  BIO_get_ssl(bio.get(), &ssl);
  std::unique_ptr<X509, decltype(&X509_free)> peer{
      SSL_get1_peer_certificate(ssl), X509_free};
  if (!peer)
    return {};
  char line[256];
  X509_NAME_oneline(X509_get_subject_name(peer.get()), line, sizeof line);
  return line;
}

// Returns the address of the HTTPS metrics listener the broker logged.
std::string metrics_address(const std::string& output) {
  constexpr std::string_view marker = "metrics on https://";
  auto at = output.find(marker);
  if (at == std::string::npos)
    return {};
  at += marker.size();
  return output.substr(at, output.find("/metrics", at) - at);
}

/// A broker with mutual TLS on both listeners, serving copies of the test
/// files in a directory of its own, which the tests replace.
class TlsReloadTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tb-tls-reload-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    install("server.crt", "server.crt");
    install("server.key", "server.key");
    install("ca.crt", "ca.crt");
    config_ = (dir_ / "tb.toml").string();
    write_config("");
    broker_ = started_broker(
        {"--config", config_, "--metrics-listen", "127.0.0.1:0"});
    metrics_ = metrics_address(broker_->output());
  }

  void TearDown() override {
    EXPECT_EQ(broker_->stop(SIGTERM), 0) << broker_->output();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Copies the test file `from` over the served file `to`.
  void install(const std::string& from, const std::string& to) {
    fs::copy_file(shared_test_certs().path(from), dir_ / to,
                  fs::copy_options::overwrite_existing);
  }

  // Writes the config: `[tls]` on the files of the directory, then `extra`.
  void write_config(const std::string& extra) {
    std::ofstream out{config_};
    out << "[tls]\ncert = \"" << (dir_ / "server.crt").string()
        << "\"\nkey = \"" << (dir_ / "server.key").string()
        << "\"\nclient_ca = \"" << (dir_ / "ca.crt").string() << "\"\n"
        << extra;
  }

  // Sends SIGHUP and waits for the `count`th log line containing `text`.
  void reload(const std::string& text, std::size_t count = 1) {
    ::kill(broker_->pid(), SIGHUP);
    ASSERT_TRUE(broker_->wait_for_occurrences(text, count, patience))
        << broker_->output();
  }

  // Returns the subject a new connection is served, polling for up to
  // `patience` until it contains `cn` (the gRPC listener re-reads its copy
  // every second).
  std::string poll_subject(const std::string& cn) {
    auto deadline = std::chrono::steady_clock::now() + patience;
    std::string subject;
    do {
      subject =
          served_subject(tls_channel(broker_->address(), "ca.crt", "client"));
      if (subject.find(cn) != std::string::npos)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < deadline);
    return subject;
  }

  fs::path dir_;
  std::string config_;
  std::string metrics_;
  std::unique_ptr<broker_process> broker_;
};

TEST_F(TlsReloadTest, SighupServesTheRenewedCertificateAndKeepsOpenStreams) {
  EXPECT_EQ(served_subject(tls_channel(broker_->address(), "ca.crt", "client")),
            "CN=localhost,O=tinybroker-test");
  auto expiry = "tinybroker_tls_certificate_expiry_timestamp_seconds ";
  ASSERT_FALSE(metrics_.empty()) << broker_->output();
  EXPECT_NE(https_subject(metrics_).find("CN=localhost"), std::string::npos);
  EXPECT_NE(scrape(metrics_).find(expiry +
                                  std::to_string(not_after_of("server.crt"))),
            std::string::npos);
  // A stream opened before the renewal.
  auto open_channel = tls_channel(broker_->address(), "ca.crt", "client");
  token_session session{open_channel, ""};
  ASSERT_TRUE(session.subscribe(1, "renew.>"));
  ASSERT_TRUE(session.read_until(kind::kSubscribed));
  install("renewed-server.crt", "server.crt");
  install("renewed-server.key", "server.key");
  reload("TLS files reloaded");
  EXPECT_EQ(poll_subject("CN=renewed"), "CN=renewed,O=tinybroker-test");
  // The metrics listener serves it from the next handshake on.
  EXPECT_NE(https_subject(metrics_).find("CN=renewed"), std::string::npos);
  EXPECT_NE(scrape(metrics_).find(
                expiry + std::to_string(not_after_of("renewed-server.crt"))),
            std::string::npos);
  // The open stream still publishes and receives.
  ASSERT_TRUE(session.publish(2, {"renew.after"}));
  auto delivered = session.read_until(kind::kDeliveries);
  ASSERT_TRUE(delivered);
  EXPECT_EQ(delivered->deliveries().deliveries(0).topic(), "renew.after");
}

TEST_F(TlsReloadTest, AFileThatDoesNotLoadChangesNothingAndIsLogged) {
  // A key that belongs to another certificate.
  install("renewed-server.crt", "server.crt");
  reload("TLS reload failed, the listeners keep the certificate they had: "
         "tls: key " +
         (dir_ / "server.key").string() + " does not match the certificate");
  // Not a certificate at all.
  std::ofstream{dir_ / "server.crt"} << "not a certificate\n";
  reload("holds no PEM certificate");
  // New connections still get the old certificate, after a refresh too.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(served_subject(tls_channel(broker_->address(), "ca.crt", "client")),
            "CN=localhost,O=tinybroker-test");
  EXPECT_NE(scrape(metrics_).find(
                "tinybroker_tls_certificate_expiry_timestamp_seconds " +
                std::to_string(not_after_of("server.crt"))),
            std::string::npos);
}

TEST_F(TlsReloadTest, AConfigThatDoesNotParseIsLoggedOneLinePerProblem) {
  write_config("[metrics\nx = 1\n");
  reload("reload failed, the tokens and the TLS files stay as they were: " +
         config_ +
         ":5: TOML syntax error: an invalid key appeared (is not a "
         "valid key)\n");
  // No multi-line error squeezed into one line with literal \n.
  EXPECT_EQ(broker_->output().find("\\n"), std::string::npos)
      << broker_->output();
}

TEST_F(TlsReloadTest, AnExpiringRenewalIsWarnedOfAtTheReload) {
  install("expiring-server.crt", "server.crt");
  install("expiring-server.key", "server.key");
  reload("WARN  tls: the server certificate " + (dir_ / "server.crt").string() +
         " expires on ");
  EXPECT_NE(broker_->output().find("Renew it, then send SIGHUP"),
            std::string::npos);
}

TEST_F(TlsReloadTest, RefusedClientCertificatesAreLoggedWithTheirReason) {
  EXPECT_TRUE(served_subject(
                  tls_channel(broker_->address(), "ca.crt", "expired-client"))
                  .empty());
  EXPECT_TRUE(
      broker_->wait_for_output("client certificate refused: certificate "
                               "CN=client-expired,O=tinybroker-test has "
                               "expired (not after 2020-01-02T00:00:00Z)",
                               patience))
      << broker_->output();
  EXPECT_TRUE(
      served_subject(tls_channel(broker_->address(), "ca.crt", "other-client"))
          .empty());
  EXPECT_TRUE(broker_->wait_for_output(
      "client certificate refused: certificate CN=client-a,O=tinybroker-test "
      "is not signed by a CA in client_ca " +
          (dir_ / "ca.crt").string(),
      patience))
      << broker_->output();
}

TEST_F(TlsReloadTest, CliInfoNamesTheHttpsMetricsUrl) {
  const auto& certs = shared_test_certs();
  auto [code, out] = run_command(
      std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-cli",
      {"--server", "localhost:" + port_of(broker_->address()), "--ca",
       certs.path("ca.crt"), "--cert", certs.path("client.crt"), "--key",
       certs.path("client.key"), "info"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("metrics   https://" + metrics_ + "/metrics"),
            std::string::npos)
      << out;
}

TEST(TlsExpiryTest, AnExpiredOrExpiringCertificateIsWarnedOfAtStart) {
  auto expired =
      started_broker({"--config", tls_config_file("expired-server.crt",
                                                  "expired-server.key")});
  EXPECT_TRUE(expired->wait_for_output(
      "WARN  tls: the server certificate " +
          shared_test_certs().path("expired-server.crt") +
          " expired on 2020-01-02T00:00:00Z; clients refuse it",
      patience))
      << expired->output();
  EXPECT_EQ(expired->stop(SIGTERM), 0);
  auto expiring =
      started_broker({"--config", tls_config_file("expiring-server.crt",
                                                  "expiring-server.key")});
  EXPECT_TRUE(expiring->wait_for_output(" expires on ", patience))
      << expiring->output();
  // Made with 5 days to go at the start of this test program.
  auto text = expiring->output();
  EXPECT_TRUE(text.find("(in 4 days)") != std::string::npos ||
              text.find("(in 5 days)") != std::string::npos)
      << text;
  EXPECT_EQ(expiring->stop(SIGTERM), 0);
  // A certificate valid for two years is not warned of.
  auto fine =
      started_broker({"--config", tls_config_file("server.crt", "server.key")});
  EXPECT_EQ(fine->output().find("tls: the server certificate"),
            std::string::npos)
      << fine->output();
  EXPECT_EQ(fine->stop(SIGTERM), 0);
}

} // namespace
} // namespace tb::test
