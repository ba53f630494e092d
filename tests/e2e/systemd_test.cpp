// Running under systemd (docs/operations.md, "Running as a service"): the
// broker says READY=1 on NOTIFY_SOCKET once its port accepts connections,
// STOPPING=1 when it shuts down, RELOADING=1 around a SIGHUP reload, and
// leaves timestamps out of its lines when standard error is the journal.

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <string>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/e2e/broker_process.hpp"

namespace tb::test {
namespace {

/// A datagram socket standing in for systemd's notification socket, named
/// in NOTIFY_SOCKET for the programs the test starts.
class notify_socket {
public:
  notify_socket() {
    path_ = "/tmp/tb_notify_" + std::to_string(getpid()) + ".sock";
    ::unlink(path_.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }

  ~notify_socket() {
    ::unsetenv("NOTIFY_SOCKET");
    ::close(fd_);
    ::unlink(path_.c_str());
  }

  /// True if the socket is bound.
  bool ok() const {
    return fd_ >= 0 && bound_;
  }

  /// The next notification, or nothing after `timeout`.
  std::optional<std::string> next(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1)
      return std::nullopt;
    char buf[4096];
    auto n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0)
      return std::nullopt;
    return std::string(buf, static_cast<std::size_t>(n));
  }

private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

/// Returns true if a TCP connection to `address` (`127.0.0.1:PORT`)
/// succeeds.
bool accepts_connections(const std::string& address) {
  auto colon = address.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port =
      htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok =
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

TEST(Systemd, ReadyComesOnceThePortAcceptsAndStoppingOnShutdown) {
  notify_socket systemd;
  ASSERT_TRUE(systemd.ok());
  broker_process broker;
  auto ready = systemd.next(std::chrono::seconds(20));
  ASSERT_TRUE(ready) << broker.output();
  EXPECT_NE(ready->find("READY=1"), std::string::npos) << *ready;
  auto status = ready->find("STATUS=listening on ");
  ASSERT_NE(status, std::string::npos) << *ready;
  auto address = ready->substr(status + 20);
  address = address.substr(0, address.find('\n'));
  EXPECT_TRUE(accepts_connections(address)) << address;

  ::kill(broker.pid(), SIGHUP);
  auto reloading = systemd.next(std::chrono::seconds(10));
  ASSERT_TRUE(reloading);
  EXPECT_NE(reloading->find("RELOADING=1"), std::string::npos) << *reloading;
  auto ready_again = systemd.next(std::chrono::seconds(10));
  ASSERT_TRUE(ready_again);
  EXPECT_NE(ready_again->find("READY=1"), std::string::npos) << *ready_again;

  ASSERT_EQ(broker.stop(SIGTERM), 0);
  auto stopping = systemd.next(std::chrono::seconds(1));
  ASSERT_TRUE(stopping);
  EXPECT_NE(stopping->find("STOPPING=1"), std::string::npos) << *stopping;
}

TEST(Systemd, LinesToTheJournalCarryThePriorityInsteadOfATimestamp) {
  // JOURNAL_STREAM names the broker's standard error, as systemd sets it.
  child_process broker{
      "/bin/sh",
      {"-c",
       "JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec \"$0\" "
       "--listen 127.0.0.1:0 --metrics-listen off",
       TINYBROKER_BINARY}};
  ASSERT_TRUE(broker.wait_for_output("listening on", std::chrono::seconds(20)))
      << broker.output();
  auto out = broker.output();
  auto line = out.substr(out.rfind('\n', out.find("listening on")) + 1);
  EXPECT_EQ(line.rfind("<6>INFO  tinybroker ", 0), 0u) << line;
  ASSERT_EQ(broker.stop(SIGTERM), 0);
}

} // namespace
} // namespace tb::test
