// End to end: the metrics listener of a real broker with `[tls]`: scraped
// over HTTPS with the test CA; plain HTTP gets nothing and cannot tie up
// the listener's threads; with `client_ca` a scraper needs a certificate.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

#include <httplib.h>

#include "e2e_fixture.hpp"
#include "tls_fixture.hpp"

namespace tb::test {
namespace {

// Returns the metrics address a broker logged (`metrics on
// https://HOST:PORT/metrics`), or "" if it logged none.
std::string https_metrics_address(const std::string& output) {
  constexpr std::string_view marker = "metrics on https://";
  auto at = output.find(marker);
  if (at == std::string::npos)
    return {};
  at += marker.size();
  return output.substr(at, output.find("/metrics", at) - at);
}

// GETs /metrics over HTTPS from `localhost:PORT`, trusting the test CA and
// presenting the test certificate `client` unless it is empty.
httplib::Result https_scrape(const std::string& address,
                             const std::string& client = {}) {
  const auto& certs = shared_test_certs();
  auto port = std::stoi(port_of(address));
  auto scraper = client.empty()
                     ? std::make_unique<httplib::SSLClient>("localhost", port)
                     : std::make_unique<httplib::SSLClient>(
                           "localhost", port, certs.path(client + ".crt"),
                           certs.path(client + ".key"));
  scraper->set_ca_cert_path(certs.path("ca.crt"));
  scraper->enable_server_certificate_verification(true);
  scraper->set_connection_timeout(10, 0);
  scraper->set_read_timeout(10, 0);
  return scraper->Get("/metrics");
}

// Returns a socket connected to 127.0.0.1:`port`, or -1.
int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 &&
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0)
    return fd;
  if (fd >= 0)
    close(fd);
  return -1;
}

/// A broker with TLS and its metrics listener on a free loopback port.
class TlsMetricsTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    // httplib's SSLClient writes with SSL_write, which raises SIGPIPE when
    // the broker has closed a refused connection; the broker ignores
    // SIGPIPE (gRPC does), and so must this process, which may not have
    // started gRPC yet (ctest runs each test on its own).
    std::signal(SIGPIPE, SIG_IGN);
  }

  void start(const std::string& client_ca) {
    broker_ = started_broker(
        {"--config", tls_config_file("server.crt", "server.key", client_ca),
         "--metrics-listen", "127.0.0.1:0"});
    metrics_ = https_metrics_address(broker_->output());
    ASSERT_FALSE(metrics_.empty()) << broker_->output();
  }

  void TearDown() override {
    if (broker_) {
      EXPECT_EQ(broker_->stop(SIGTERM), 0) << broker_->output();
    }
  }

  std::unique_ptr<broker_process> broker_;
  std::string metrics_;
};

TEST_F(TlsMetricsTest, MetricsAreScrapedOverHttps) {
  start({});
  auto res = https_scrape(metrics_);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("tinybroker_sessions"), std::string::npos)
      << res->body;
}

TEST_F(TlsMetricsTest, PlainHttpGetsNothing) {
  start({});
  httplib::Client plain{"127.0.0.1", std::stoi(port_of(metrics_))};
  plain.set_read_timeout(10, 0);
  auto res = plain.Get("/metrics");
  EXPECT_FALSE(res && res->status == 200 &&
               res->body.find("tinybroker_") != std::string::npos)
      << "plain HTTP got the metrics";
}

TEST_F(TlsMetricsTest, SilentAndPlainClientsDoNotTieUpTheListener) {
  start({});
  auto port = std::stoi(port_of(metrics_));
  // More idle connections than the listener has threads and queue slots
  // (2 + 8, and the accepting thread), some of them speaking plain HTTP:
  // each handshake ends within the listener's io_timeout.
  std::vector<int> idle;
  for (int i = 0; i < 14; ++i) {
    auto fd = connect_to(port);
    ASSERT_GE(fd, 0);
    if (i % 2 == 0) {
      std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
      ASSERT_GT(write(fd, request.data(), request.size()), 0);
    }
    idle.push_back(fd);
  }
  auto res = https_scrape(metrics_);
  for (auto fd : idle)
    close(fd);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

TEST_F(TlsMetricsTest, MutualTlsRefusesAScraperWithoutCertificate) {
  start("ca.crt");
  auto refused = https_scrape(metrics_);
  EXPECT_FALSE(refused && refused->status == 200)
      << "a scraper without certificate got the metrics";
  auto other = https_scrape(metrics_, "other-client");
  EXPECT_FALSE(other && other->status == 200)
      << "a certificate from another CA got the metrics";
  auto res = https_scrape(metrics_, "client");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

TEST_F(TlsMetricsTest, MetricsTlsFalseKeepsPlainHttp) {
  broker_ = started_broker({"--config",
                            tls_config_file("server.crt", "server.key", {},
                                            "[metrics]\ntls = false\n"),
                            "--metrics-listen", "127.0.0.1:0"});
  auto out = broker_->output();
  constexpr std::string_view marker = "metrics on http://";
  auto at = out.find(marker);
  ASSERT_NE(at, std::string::npos) << out;
  at += marker.size();
  auto address = out.substr(at, out.find("/metrics", at) - at);
  httplib::Client plain{"127.0.0.1", std::stoi(port_of(address))};
  plain.set_read_timeout(10, 0);
  auto res = plain.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

} // namespace
} // namespace tb::test
