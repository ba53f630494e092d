#include "tests/cluster/cluster_fixture.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include "client/connection.hpp"
#include "tests/e2e/test_certs.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::test {

std::string make_node_cert(const std::string& name, const std::string& ca) {
  const auto& certs = shared_test_certs();
  auto base = certs.dir + "/" + name;
  auto ext = base + ".ext";
  auto cmd = "printf 'extendedKeyUsage=serverAuth,clientAuth\\n' > '" + ext +
             "' && openssl req -new -newkey ec -pkeyopt "
             "ec_paramgen_curve:P-256 -nodes -subj '/CN=" +
             name + "' -keyout '" + base + ".key' -out '" + base +
             ".csr' 2>/dev/null && openssl x509 -req -in '" + base +
             ".csr' -CA '" + certs.path(ca + ".crt") + "' -CAkey '" +
             certs.path(ca + ".key") + "' -CAcreateserial -days 2 -extfile '" +
             ext + "' -out '" + base + ".crt' 2>/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return base;
}

void ClusterFixture::TearDown() {
  for (auto& n : nodes)
    if (n->process) {
      ::kill(n->process->pid(), SIGCONT); // a stopped node must see SIGKILL
      n->process.reset();                 // SIGKILL by PID
    }
}

cluster_node& ClusterFixture::add_node(const std::string& name) {
  auto n = std::make_unique<cluster_node>();
  n->name = name;
  n->port = static_cast<uint16_t>(free_loopback_port());
  nodes.push_back(std::move(n));
  return *nodes.back();
}

void ClusterFixture::add_wrong_peer(const std::string& name,
                                    const std::string& address) {
  auto& n = add_node(name);
  n.port =
      static_cast<uint16_t>(std::stoul(address.substr(address.rfind(':') + 1)));
}

std::string ClusterFixture::cluster_address(const cluster_node& n) {
  return "127.0.0.1:" + std::to_string(n.port);
}

bool ClusterFixture::start(cluster_node& n, const std::string& extra,
                           const std::string& tail,
                           std::chrono::milliseconds timeout) {
  std::string peers;
  for (auto& other : nodes)
    if (other.get() != &n)
      peers += (peers.empty() ? "\"" : ", \"") + cluster_address(*other) + "\"";
  auto text = "[cluster]\nname = \"" + n.name + "\"\nlisten = \"" +
              cluster_address(n) + "\"\npeers = [" + peers +
              "]\nheartbeat = \"100ms\"\ndead_after = \"500ms\"\n" + extra +
              "\n" + tail;
  n.config = write_temp_file(text, ".toml");
  std::vector<std::string> args{"--config", n.config};
  args.insert(args.end(), n.args.begin(), n.args.end());
  n.process = std::make_unique<broker_process>(args);
  return n.process->wait_ready(timeout);
}

tinybroker::v1::StatsReply ClusterFixture::full_stats(const cluster_node& n) {
  if (!n.process)
    return {};
  auto channel = client::make_channel(n.process->address());
  auto stub = tinybroker::v1::Broker::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  tinybroker::v1::StatsRequest request;
  tinybroker::v1::StatsReply reply;
  if (!stub->Stats(&ctx, request, &reply).ok())
    return {};
  return reply;
}

std::string ClusterFixture::state_of(const cluster_node& n,
                                     const std::string& key) {
  auto s = stats(n);
  for (auto& p : s.peers())
    if (p.name() == key || p.address() == key)
      return p.state();
  return {};
}

bool ClusterFixture::wait_state(const cluster_node& n, const std::string& key,
                                const std::string& state,
                                std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    if (state_of(n, key) == state)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

bool ClusterFixture::wait_synced(const cluster_node& n, size_t count,
                                 std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    size_t synced = 0;
    auto s = stats(n);
    for (auto& p : s.peers())
      synced += p.state() == "synced" ? 1 : 0;
    if (synced == count)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

void ClusterFixture::start_three() {
  add_node("n1");
  add_node("n2");
  add_node("n3");
  for (auto& n : nodes)
    ASSERT_TRUE(start(*n)) << n->name;
  for (auto& n : nodes)
    ASSERT_TRUE(wait_synced(*n, 2, std::chrono::seconds(5)))
        << n->name << " did not sync";
}

std::unique_ptr<client::connection>
ClusterFixture::connect(const cluster_node& n) {
  auto conn = std::make_unique<client::connection>(n.process->address());
  EXPECT_TRUE(conn->wait_connected(std::chrono::seconds(5))) << n.name;
  return conn;
}

std::string ClusterFixture::metrics_of(const cluster_node& n) {
  const std::string prefix = "metrics on http://";
  auto log = n.process->output();
  auto at = log.find(prefix);
  if (at == std::string::npos) {
    ADD_FAILURE() << "node " << n.name << " names no metrics address: " << log;
    return "";
  }
  at += prefix.size();
  auto address = log.substr(at, log.find("/metrics", at) - at);
  auto colon = address.rfind(':');
  httplib::Client http{address.substr(0, colon),
                       std::stoi(address.substr(colon + 1))};
  auto res = http.Get("/metrics");
  if (!res) {
    ADD_FAILURE() << "node " << n.name << ": /metrics at " << address
                  << " did not answer";
    return "";
  }
  return res->body;
}

namespace {

// True if every thread of process `pid` is stopped (state T in
// /proc/PID/task/TID/stat), or the process is gone.
bool all_threads_stopped(pid_t pid) {
  std::error_code ec;
  auto tasks = "/proc/" + std::to_string(pid) + "/task";
  for (auto& task : std::filesystem::directory_iterator{tasks, ec}) {
    std::ifstream in{task.path() / "stat"};
    std::string stat{std::istreambuf_iterator<char>{in}, {}};
    auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() &&
        stat[close + 2] != 'T' && stat[close + 2] != 't')
      return false;
  }
  return true;
}

} // namespace

void ClusterFixture::signal(cluster_node& n, int sig) {
  ASSERT_TRUE(n.process);
  ::kill(n.process->pid(), sig);
  if (sig != SIGSTOP)
    return;
  // kill() returns before the threads stop: one that runs on another core
  // stops when it next enters the kernel. A test that sends a message to
  // the hung node right after must not have it answered.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!all_threads_stopped(n.process->pid())) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "node " << n.name << " did not stop within 2 s of SIGSTOP";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

bool ClusterFixture::restart(cluster_node& n,
                             std::chrono::milliseconds timeout) {
  if (n.process) {
    n.process->stop(SIGTERM, timeout);
    n.process.reset();
  }
  std::vector<std::string> args{"--config", n.config};
  args.insert(args.end(), n.args.begin(), n.args.end());
  n.process = std::make_unique<broker_process>(args);
  return n.process->wait_ready(std::chrono::seconds(20));
}

} // namespace tb::test
