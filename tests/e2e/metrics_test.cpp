// End-to-end tests of the Prometheus endpoint: a real broker with its
// metrics listener on a free loopback port, scraped over HTTP and read with
// the official parser (python3-prometheus-client); the listener's flag,
// config keys, busy port and `off`.

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "../net/prometheus_parse.hpp"
#include "group_admin_fixture.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;

// Returns the metrics address a broker logged (`metrics on
// http://HOST:PORT/metrics`), or "" if it logged none.
std::string metrics_address_of(const std::string& output) {
  constexpr std::string_view marker = "metrics on http://";
  auto at = output.find(marker);
  if (at == std::string::npos)
    return {};
  at += marker.size();
  return output.substr(at, output.find("/metrics", at) - at);
}

// GETs `path` from the metrics listener at `address` (`HOST:PORT`).
httplib::Result http_get(const std::string& address, const std::string& path) {
  auto colon = address.rfind(':');
  httplib::Client client{address.substr(0, colon),
                         std::stoi(address.substr(colon + 1))};
  client.set_read_timeout(10, 0);
  return client.Get(path);
}

// Returns the TCP ports process `pid` listens on (its sockets in state
// LISTEN, from /proc).
std::set<int> listening_ports(pid_t pid) {
  std::set<std::string> inodes;
  auto fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  if (auto* dir = opendir(fd_dir.c_str())) {
    while (auto* entry = readdir(dir)) {
      char target[64] = {};
      auto path = fd_dir + "/" + entry->d_name;
      auto n = readlink(path.c_str(), target, sizeof(target) - 1);
      std::string link(target, n > 0 ? static_cast<size_t>(n) : 0);
      if (link.rfind("socket:[", 0) == 0)
        inodes.insert(link.substr(8, link.size() - 9));
    }
    closedir(dir);
  }
  std::set<int> ports;
  for (auto table : {"/net/tcp", "/net/tcp6"}) {
    std::ifstream in{"/proc/" + std::to_string(pid) + table};
    std::string line;
    std::getline(in, line); // the header
    while (std::getline(in, line)) {
      std::istringstream fields{line};
      std::string slot, local, remote, state, queues, timer, retr, uid, tmo;
      std::string inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retr >>
          uid >> tmo >> inode;
      if (state == "0A" && inodes.count(inode) != 0)
        ports.insert(
            std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16));
    }
  }
  return ports;
}

// Returns the port of `address` (`HOST:PORT`).
int port_of(const std::string& address) {
  return std::stoi(address.substr(address.rfind(':') + 1));
}

/// A broker with its metrics listener on a free port, and a scraper.
class MetricsTest : public GroupAdminTest {
protected:
  std::vector<std::string> broker_args() override {
    return {"--metrics-listen", "127.0.0.1:0"};
  }

  /// What one scrape answered.
  struct scrape_result {
    int status = 0;
    std::string body;
    std::string content_type;
    parsed_metrics parsed;
  };

  /// Scrapes /metrics and parses what a 200 carried.
  scrape_result scrape() {
    scrape_result result;
    auto res = http_get(metrics_address_of(broker_->output()), "/metrics");
    if (!res)
      return result;
    result.status = res->status;
    result.body = res->body;
    result.content_type = res->get_header_value("Content-Type");
    if (res->status == 200)
      result.parsed = parse_with_prometheus_client(res->body);
    return result;
  }

  /// Scrapes until a scrape is answered 200 with parseable text for which
  /// `done` holds, or `patience` passed (the counters of a running broker
  /// settle asynchronously); expects the last scrape to be such an answer
  /// and returns what it parsed.
  template <class Predicate>
  parsed_metrics scrape_until(Predicate done) {
    auto deadline = std::chrono::steady_clock::now() + patience;
    auto good = [&](const scrape_result& r) {
      return r.status == 200 && r.parsed.ok && done(r.parsed);
    };
    auto r = scrape();
    while (!good(r) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms); // polling another process
      r = scrape();
    }
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type.rfind("text/plain; version=0.0.4", 0), 0u)
        << r.content_type;
    EXPECT_TRUE(r.parsed.ok) << r.parsed.output << "\n" << r.body;
    return r.parsed;
  }
};

TEST_F(MetricsTest, AScrapeShowsTrafficGroupsAndDeliveryLatency) {
  ASSERT_TRUE(create_group("workers", on("jobs.>")).ok());
  auto member = worker("workers", "jobs.>");
  publish({"jobs.a", "jobs.b", "jobs.c", "nowhere.at.all"});
  std::vector<uint64_t> ids;
  while (ids.size() < 3) {
    auto frame = member->wait_for(pb::ServerFrame::kDeliveries, patience);
    ASSERT_TRUE(frame.has_value()) << "got " << ids.size() << " deliveries";
    for (auto& d : frame->deliveries().deliveries())
      ids.push_back(d.delivery_id());
  }
  ASSERT_TRUE(member->ack(ids));
  auto acked = R"({"group":"workers"})";
  auto m = scrape_until([&](const parsed_metrics& p) {
    return p.value("tinybroker_group_acked_total", acked) == 3.0;
  });
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.types["tinybroker_messages_published"], "counter");
  EXPECT_EQ(m.types["tinybroker_delivery_latency_seconds"], "histogram");
  EXPECT_EQ(m.value("tinybroker_messages_published_total"), 4.0);
  EXPECT_EQ(m.value("tinybroker_messages_unrouted_total"), 1.0);
  EXPECT_GE(m.value("tinybroker_deliveries_total").value_or(0), 3.0);
  EXPECT_EQ(m.value("tinybroker_groups"), 1.0);
  EXPECT_GE(m.value("tinybroker_sessions").value_or(0), 1.0);
  EXPECT_GT(m.value("tinybroker_resident_memory_bytes").value_or(0), 0.0);
  EXPECT_GT(m.value("tinybroker_uptime_seconds").value_or(0), 0.0);
  EXPECT_EQ(m.count("tinybroker_build_info"), 1u);
  EXPECT_EQ(m.value("tinybroker_group_received_total", acked), 3.0);
  EXPECT_EQ(m.value("tinybroker_group_delivered_total", acked), 3.0);
  EXPECT_EQ(m.value("tinybroker_group_acked_total", acked), 3.0);
  EXPECT_EQ(m.value("tinybroker_group_members", acked), 1.0);
  EXPECT_EQ(m.value("tinybroker_group_pending_messages", acked), 0.0);
  EXPECT_EQ(m.value("tinybroker_group_in_flight", acked), 0.0);
  // Deliveries were written, so the latency histogram counted them.
  auto count = m.value("tinybroker_delivery_latency_seconds_count");
  EXPECT_GE(count.value_or(0), 3.0);
  EXPECT_EQ(
      m.value("tinybroker_delivery_latency_seconds_bucket", R"({"le":"+Inf"})"),
      count);
  // Per-topic series are off by default.
  EXPECT_EQ(m.count("tinybroker_topic_destinations"), 0u);
}

TEST_F(MetricsTest, SubscriptionsCountFanOutAndEveryGroupMembership) {
  // With 6 groups and no member the gauge said 6; it is 0.
  for (auto name : {"g1", "g2", "g3", "g4", "g5", "g6"})
    ASSERT_TRUE(create_group(name, on(std::string{name} + ".>")).ok());
  auto m = scrape_until([](const parsed_metrics& p) {
    return p.value("tinybroker_groups") == 6.0;
  });
  EXPECT_EQ(m.value("tinybroker_subscriptions"), 0.0);
  // 1 fan-out subscription, 3 members of g1, 1 of g2: 5 (it said 3).
  auto fanout = subscriber(1, "news.>");
  std::vector<std::unique_ptr<client::session>> members;
  for (int i = 0; i < 3; ++i)
    members.push_back(worker("g1", "g1.>"));
  members.push_back(worker("g2", "g2.>"));
  m = scrape_until([](const parsed_metrics& p) {
    return p.value("tinybroker_sessions") == 5.0;
  });
  EXPECT_EQ(m.value("tinybroker_subscriptions"), 5.0);
}

TEST_F(MetricsTest, OtherPathsAre404) {
  // `/` is the console's page (issue 27, docs/console.md).
  auto res = http_get(metrics_address_of(broker_->output()), "/nothing");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(res->body.find("the console at /"), std::string::npos) << res->body;
}

/// A broker whose config turns per-topic series on.
class PerTopicMetricsTest : public MetricsTest {
protected:
  std::vector<std::string> broker_args() override {
    auto config = write_temp_file("[metrics]\nper_topic = true\n", ".toml");
    return {"--config", config, "--metrics-listen", "127.0.0.1:0"};
  }
};

TEST_F(PerTopicMetricsTest, TopicsAreLabelledWithTheirNamesEscaped) {
  auto sub = subscriber(1, ">");
  publish({"orders.eu", "odd\"name\\x"});
  auto m = scrape_until([](const parsed_metrics& p) {
    return p.count("tinybroker_topic_destinations") >= 2;
  });
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(
      m.value("tinybroker_topic_destinations", R"({"topic":"orders.eu"})"), 1.0)
      << m.output;
  // The parser reads the escaped label back as the topic's own name.
  EXPECT_EQ(
      m.value("tinybroker_topic_destinations", R"({"topic":"odd\"name\\x"})"),
      1.0)
      << m.output;
  EXPECT_EQ(m.count("tinybroker_topic_publishers"),
            m.count("tinybroker_topic_destinations"));
}

TEST(MetricsListener, OffMeansNoListenerAndOnMeansOneMore) {
  broker_process off{{"--metrics-listen", "off"}};
  ASSERT_TRUE(off.wait_ready()) << off.output();
  EXPECT_NE(off.output().find("; metrics off"), std::string::npos)
      << off.output();
  EXPECT_EQ(listening_ports(off.pid()), std::set<int>{port_of(off.address())});
  broker_process on{{"--metrics-listen", "127.0.0.1:0"}};
  ASSERT_TRUE(on.wait_ready()) << on.output();
  auto metrics = metrics_address_of(on.output());
  ASSERT_FALSE(metrics.empty()) << on.output();
  EXPECT_EQ(listening_ports(on.pid()),
            (std::set<int>{port_of(on.address()), port_of(metrics)}));
  EXPECT_EQ(off.stop(SIGTERM), 0);
  EXPECT_EQ(on.stop(SIGTERM), 0);
}

TEST(MetricsListener, ABusyMetricsPortFailsTheStartNamingTheListener) {
  broker_process first{{"--metrics-listen", "127.0.0.1:0"}};
  ASSERT_TRUE(first.wait_ready()) << first.output();
  auto busy = metrics_address_of(first.output());
  child_process second{TINYBROKER_BINARY,
                       {"--listen", "127.0.0.1:0", "--metrics-listen", busy}};
  auto code = second.wait_exit(patience);
  ASSERT_TRUE(code.has_value()) << "two brokers share " << busy;
  EXPECT_EQ(*code, 1) << second.output();
  EXPECT_NE(second.output().find("metrics listener: cannot listen on " + busy +
                                 ": address already in use"),
            std::string::npos)
      << second.output();
  EXPECT_EQ(second.output().find("listening on"), std::string::npos);
  EXPECT_EQ(first.stop(SIGTERM), 0);
}

TEST(MetricsListener, StopsPromptlyWithAnIdleScrapeConnectionOpen) {
  broker_process broker{{"--metrics-listen", "127.0.0.1:0"}};
  ASSERT_TRUE(broker.wait_ready()) << broker.output();
  auto address = metrics_address_of(broker.output());
  // A client that connects and sends nothing holds an HTTP thread.
  int idle = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port_of(address)));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(idle, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  ASSERT_EQ(http_get(address, "/metrics").error(), httplib::Error::Success);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(broker.stop(SIGTERM), 0) << broker.output();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  close(idle);
}

TEST(MetricsListener, HelpListsTheFlag) {
  auto [code, out] = run_broker_command({"--help"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("--metrics-listen"), std::string::npos) << out;
}

TEST(MetricsListener, BadFlagValuesExit2NamingTheFlag) {
  for (auto bad : {"nonsense", "127.0.0.1", "127.0.0.1:99999", "on"}) {
    auto [code, out] = run_broker_command({"--metrics-listen", bad});
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find(std::string{"--metrics-listen: got \""} + bad +
                       "\"; expected \"off\" or HOST:PORT"),
              std::string::npos)
        << out;
  }
}

TEST(MetricsListener, BadConfigValuesExit2NamingKeyAndLine) {
  auto path =
      write_temp_file("[metrics]\nlisten = \"nope\"\nper_topic = 1\n", ".toml");
  auto [code, out] = run_broker_command({"--config", path});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find(":2:"), std::string::npos) << out;
  EXPECT_NE(out.find("metrics.listen: got \"nope\""), std::string::npos) << out;
  EXPECT_NE(out.find("metrics.per_topic"), std::string::npos) << out;
}

TEST(MetricsListener, CheckConfigShowsTheMetricsSettings) {
  auto plain = write_temp_file("", ".toml");
  auto [code, out] = run_broker_command({"--check-config", plain});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("metrics: listen 127.0.0.1:7401, per_topic false"),
            std::string::npos)
      << out;
  auto custom = write_temp_file(
      "[metrics]\nlisten = \"[::1]:9100\"\nper_topic = true\n", ".toml");
  std::tie(code, out) = run_broker_command({"--check-config", custom});
  EXPECT_NE(out.find("metrics: listen [::1]:9100, per_topic true"),
            std::string::npos)
      << out;
  std::tie(code, out) =
      run_broker_command({"--check-config", custom, "--metrics-listen", "off"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("metrics: off"), std::string::npos) << out;
}

} // namespace
} // namespace tb::test
