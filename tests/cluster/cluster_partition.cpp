#include "tests/cluster/cluster_partition.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>

namespace tb::test {

namespace {

// Runs `nft -f -` with `script` on its input; returns its output (stdout
// and stderr) and sets `*ok`.
std::string partition_nft(const std::string& script, bool* ok) {
  char path[] = "/tmp/tb-partition-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) {
    *ok = false;
    return "cannot write a temporary file";
  }
  ::write(fd, script.data(), script.size());
  ::close(fd);
  auto cmd = std::string{"nft -f '"} + path + "' 2>&1";
  std::string out;
  if (auto* p = ::popen(cmd.c_str(), "r")) {
    char buf[512];
    while (auto n = std::fread(buf, 1, sizeof(buf), p))
      out.append(buf, n);
    *ok = ::pclose(p) == 0;
  } else {
    *ok = false;
    out = "cannot run nft";
  }
  ::unlink(path);
  return out;
}

// Runs `cmd` and returns what it printed on stdout.
std::string partition_output(const std::string& cmd) {
  std::string out;
  if (auto* p = ::popen(cmd.c_str(), "r")) {
    char buf[512];
    while (auto n = std::fread(buf, 1, sizeof(buf), p))
      out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

// Returns "{ a, b, c }" for an nftables anonymous set.
std::string partition_set(const std::vector<uint16_t>& ports) {
  std::string s = "{ ";
  for (size_t i = 0; i < ports.size(); ++i)
    s += (i == 0 ? "" : ", ") + std::to_string(ports[i]);
  return s + " }";
}

// Returns the socket inodes of process `pid`'s open files.
std::set<unsigned long> partition_socket_inodes(pid_t pid) {
  std::set<unsigned long> inodes;
  auto dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr)
    return inodes;
  while (auto* e = ::readdir(d)) {
    char target[128];
    auto link = dir + "/" + e->d_name;
    auto n = ::readlink(link.c_str(), target, sizeof(target) - 1);
    if (n <= 0)
      continue;
    target[n] = '\0';
    unsigned long inode = 0;
    if (std::sscanf(target, "socket:[%lu]", &inode) == 1)
      inodes.insert(inode);
  }
  ::closedir(d);
  return inodes;
}

} // namespace

loopback_partition::loopback_partition()
    : table_("tb_partition_" + std::to_string(::getpid())) {
  if (::geteuid() == 0)
    remove_stale_tables();
}

int loopback_partition::remove_stale_tables() {
  constexpr std::string_view prefix = "table inet tb_partition_";
  auto tables = partition_output("nft list tables 2>/dev/null");
  std::istringstream lines{tables};
  int removed = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0)
      continue;
    auto pid = static_cast<pid_t>(
        std::strtol(line.c_str() + prefix.size(), nullptr, 10));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH)
      continue;
    bool ok = false;
    partition_nft("delete table inet " +
                      line.substr(std::strlen("table inet ")) + "\n",
                  &ok);
    removed += ok ? 1 : 0;
  }
  return removed;
}

loopback_partition::~loopback_partition() {
  heal();
}

std::string loopback_partition::why_unavailable() {
  if (::geteuid() != 0)
    return "partitions need root (nftables rules on loopback); run the "
           "test as root";
  if (std::system("nft --version >/dev/null 2>&1") != 0)
    return "no `nft` command: install nftables (scripts/setup.sh does)";
  return {};
}

std::vector<uint16_t> loopback_partition::connection_ports(
    pid_t pid, const std::vector<uint16_t>& remote_ports) {
  auto inodes = partition_socket_inodes(pid);
  std::set<uint16_t> wanted(remote_ports.begin(), remote_ports.end());
  std::vector<uint16_t> result;
  for (auto file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in{file};
    std::string line;
    std::getline(in, line); // the header
    while (std::getline(in, line)) {
      std::istringstream row{line};
      std::string slot, local, remote, state, queues, timer, retransmits;
      unsigned long uid = 0, timeout = 0, inode = 0;
      row >> slot >> local >> remote >> state >> queues >> timer >>
          retransmits >> uid >> timeout >> inode;
      if (!row || inodes.count(inode) == 0)
        continue;
      auto port_of = [](const std::string& address) {
        return static_cast<uint16_t>(
            std::stoul(address.substr(address.rfind(':') + 1), nullptr, 16));
      };
      if (wanted.count(port_of(remote)) != 0)
        result.push_back(port_of(local));
    }
  }
  return result;
}

bool loopback_partition::isolate(pid_t pid, uint16_t own_port,
                                 const std::vector<uint16_t>& others,
                                 std::string* why) {
  heal();
  // First the rules that need no lookup (its port, new connections to the
  // others), so a connection it dials while we look is refused; then the
  // connections it has.
  auto script = "table inet " + table_ +
                " {\n"
                "  chain out {\n"
                "    type filter hook output priority 0; policy accept;\n"
                "    tcp dport " +
                std::to_string(own_port) +
                " counter drop\n"
                "    tcp sport " +
                std::to_string(own_port) +
                " counter drop\n"
                "    tcp dport " +
                partition_set(others) +
                " tcp flags & (syn | ack) == syn counter drop\n"
                "  }\n"
                "}\n";
  bool ok = false;
  auto out = partition_nft(script, &ok);
  if (!ok) {
    *why = "nft refused the partition's table: " + out;
    partition_nft("delete table inet " + table_ + "\n", &ok);
    return false;
  }
  active_ = true;
  auto mine = connection_ports(pid, others);
  if (mine.empty())
    return true;
  auto set = partition_set(mine);
  out = partition_nft("add rule inet " + table_ + " out tcp sport " + set +
                          " counter drop\nadd rule inet " + table_ +
                          " out tcp dport " + set + " counter drop\n",
                      &ok);
  if (!ok) {
    *why = "nft refused the rules for the connections: " + out;
    heal();
    return false;
  }
  return true;
}

void loopback_partition::heal() {
  if (!active_)
    return;
  active_ = false;
  std::string out;
  for (int attempt = 0; attempt < 5; ++attempt) {
    bool ok = false;
    out = partition_nft("delete table inet " + table_ + "\n", &ok);
    bool listed = false;
    partition_nft("list table inet " + table_ + "\n", &listed);
    if (!listed)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "the partition's nftables table " << table_
                << " is still there after 5 deletes (" << out
                << "); its rules drop packets of later connections on its "
                   "ports: delete it with `nft delete table inet "
                << table_ << "`";
}

uint64_t loopback_partition::dropped() const {
  if (!active_)
    return 0;
  auto text =
      partition_output("nft list table inet " + table_ + " 2>/dev/null");
  uint64_t total = 0;
  for (size_t at = text.find("packets "); at != std::string::npos;
       at = text.find("packets ", at + 1))
    total += std::strtoull(text.c_str() + at + 8, nullptr, 10);
  return total;
}

} // namespace tb::test
