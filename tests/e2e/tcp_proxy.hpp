// A TCP proxy on loopback for the end-to-end tests: forwards each accepted
// connection to a target address, and cuts every open connection on demand
// (both sockets shut down at once), as a network failure would. It can also
// leave the first connections unanswered, as a connect whose SYN was lost.

#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tb::test {

/// Forwards connections from a free loopback port to `target`.
class tcp_proxy {
public:
  /// Listens on 127.0.0.1 (a free port) and forwards to `target`
  /// (`127.0.0.1:PORT`); the first `unanswered` connections are accepted
  /// and then left silent (never forwarded, closed when the proxy ends).
  explicit tcp_proxy(const std::string& target, int unanswered = 0)
      : target_port_(static_cast<uint16_t>(
            std::stoi(target.substr(target.rfind(':') + 1)))),
        unanswered_(unanswered) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int on = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    auto addr = loopback(0);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
            0 ||
        ::listen(listener_, 16) != 0)
      throw std::runtime_error("tcp_proxy: cannot listen");
    socklen_t len = sizeof(addr);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread{[this] {
      accept_loop();
    }};
  }

  tcp_proxy(const tcp_proxy&) = delete;
  tcp_proxy& operator=(const tcp_proxy&) = delete;

  /// Stops accepting, cuts every connection and joins the threads.
  ~tcp_proxy() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    acceptor_.join();
    ::close(listener_);
    cut();
    std::vector<std::thread> pumps;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      pumps = std::move(pumps_);
    }
    for (auto& t : pumps)
      t.join();
    for (int fd : silent_)
      ::close(fd);
  }

  /// Returns `127.0.0.1:PORT` to connect to.
  std::string address() const {
    return "127.0.0.1:" + std::to_string(port_);
  }

  /// Cuts every open connection: both sides see their socket end.
  void cut() {
    std::lock_guard<std::mutex> guard{mutex_};
    for (auto& link : links_)
      if (!link->cut.exchange(true)) {
        ::shutdown(link->client, SHUT_RDWR);
        ::shutdown(link->server, SHUT_RDWR);
      }
  }

  /// Returns how many connections were accepted.
  int accepted() const {
    return accepted_.load();
  }

private:
  struct link {
    int client = -1;
    int server = -1;
    std::atomic<bool> cut{false};
  };

  static sockaddr_in loopback(uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
  }

  void accept_loop() {
    for (;;) {
      int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0 || stopping_) {
        if (client >= 0)
          ::close(client);
        return;
      }
      if (static_cast<int>(silent_.size()) < unanswered_) {
        silent_.push_back(client);
        continue;
      }
      int server = ::socket(AF_INET, SOCK_STREAM, 0);
      auto addr = loopback(target_port_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
          0) {
        ::close(server);
        ::close(client);
        continue;
      }
      ++accepted_;
      auto l = std::make_shared<link>();
      l->client = client;
      l->server = server;
      std::lock_guard<std::mutex> guard{mutex_};
      links_.push_back(l);
      pumps_.emplace_back([this, l] { pump(*l); });
    }
  }

  // Copies bytes both ways until either side ends or the link is cut.
  void pump(link& l) {
    char buf[16384];
    pollfd fds[2] = {{l.client, POLLIN, 0}, {l.server, POLLIN, 0}};
    while (!l.cut) {
      if (::poll(fds, 2, 100) < 0)
        break;
      bool done = false;
      for (int i = 0; i < 2 && !done; ++i) {
        if (fds[i].revents == 0)
          continue;
        auto n = ::read(fds[i].fd, buf, sizeof(buf));
        if (n <= 0) {
          done = true;
          break;
        }
        int to = i == 0 ? l.server : l.client;
        for (ssize_t sent = 0; sent < n;) {
          // send with MSG_NOSIGNAL: a side the proxy just cut (or that
          // hung up) must end this link, not the test with SIGPIPE.
          auto w = ::send(to, buf + sent, static_cast<size_t>(n - sent),
                          MSG_NOSIGNAL);
          if (w <= 0) {
            done = true;
            break;
          }
          sent += w;
        }
      }
      if (done)
        break;
    }
    // Under the lock, so that `cut` never shuts down a closed (and
    // perhaps reused) descriptor.
    std::lock_guard<std::mutex> guard{mutex_};
    l.cut = true;
    ::shutdown(l.client, SHUT_RDWR);
    ::shutdown(l.server, SHUT_RDWR);
    ::close(l.client);
    ::close(l.server);
  }

  uint16_t target_port_;
  int unanswered_;
  std::vector<int> silent_; // only the acceptor thread touches it
  uint16_t port_ = 0;
  int listener_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<link>> links_;
  std::vector<std::thread> pumps_;
};

} // namespace tb::test
