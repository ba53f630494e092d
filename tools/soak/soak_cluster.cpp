#include "tools/soak/soak_cluster.hpp"

#include <csignal>
#include <cstdio>
#include <fstream>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tb::soak {

namespace {

using namespace std::chrono_literals;

// How long a node may take to report ready: its first sync waits for
// configured peers up to `dead_after`, then the ready line follows.
constexpr auto soak_node_start_timeout = 30s;

// Returns a port on 127.0.0.1 that was free a moment ago (0 if none).
uint16_t soak_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

} // namespace

soak_cluster::soak_cluster(std::string broker_binary, std::string dir,
                           std::size_t nodes)
    : binary_(std::move(broker_binary)), dir_(std::move(dir)), nodes_(nodes) {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].name = "n" + std::to_string(i + 1);
    nodes_[i].cluster_port = soak_free_port();
  }
  for (auto& n : nodes_) {
    std::string peers;
    for (auto& other : nodes_)
      if (&other != &n)
        peers += std::string{peers.empty() ? "" : ", "} +
                 "\"127.0.0.1:" + std::to_string(other.cluster_port) + "\"";
    n.config = dir_ + "/" + n.name + ".toml";
    std::ofstream out{n.config};
    // Short heartbeats, so a killed node is seen at once and a restarted
    // one is not waited for long.
    out << "[cluster]\nname = \"" << n.name
        << "\"\nlisten = \"127.0.0.1:" << n.cluster_port << "\"\npeers = ["
        << peers << "]\nheartbeat = \"100ms\"\ndead_after = \"500ms\"\n";
  }
}

void soak_cluster::launch(std::size_t i) {
  auto& n = nodes_[i];
  // A fresh output file per start: the ready line of the last start must
  // not count for this one.
  n.output =
      dir_ + "/" + n.name + "-" + std::to_string(n.generation++) + ".out";
  n.address.clear();
  // No metrics listener: soaks and tests may run side by side.
  n.process = std::make_unique<child>(
      binary_,
      std::vector<std::string>{"--config", n.config, "--listen", "127.0.0.1:0",
                               "--metrics-listen", "off"},
      n.output);
}

bool soak_cluster::wait_ready(std::size_t i,
                              std::chrono::milliseconds timeout) {
  auto& n = nodes_[i];
  auto rest = wait_for_text(n.output, "listening on ", timeout);
  if (!rest) {
    std::fprintf(stderr, "tinybroker-soak: node %s did not start (%s)\n",
                 n.name.c_str(), n.output.c_str());
    return false;
  }
  n.address = rest->substr(0, rest->find(' '));
  return true;
}

bool soak_cluster::start_all() {
  // All at once: each waits for its peers' first sync before it is ready.
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    launch(i);
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (!wait_ready(i, soak_node_start_timeout))
      return false;
  return true;
}

bool soak_cluster::start(std::size_t i) {
  if (nodes_[i].generation > 0)
    ++restarts_;
  launch(i);
  return wait_ready(i, soak_node_start_timeout);
}

void soak_cluster::kill(std::size_t i) {
  auto& n = nodes_[i];
  if (n.process)
    n.process->stop(SIGKILL, 10s);
  n.process.reset();
}

std::optional<int> soak_cluster::stop(std::size_t i,
                                      std::chrono::milliseconds timeout) {
  auto& n = nodes_[i];
  if (!n.process)
    return std::nullopt;
  auto code = n.process->stop(SIGTERM, timeout);
  n.process.reset();
  return code;
}

int soak_cluster::pid(std::size_t i) const {
  auto& n = nodes_[i];
  return n.process ? n.process->pid() : 0;
}

std::optional<std::size_t>
soak_cluster::index_of(const std::string& name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].name == name)
      return i;
  return std::nullopt;
}

} // namespace tb::soak
