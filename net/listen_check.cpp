#include "net/listen_check.hpp"

#include <cerrno>
#include <cstring>
#include <memory>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tb {

namespace {

// Returns `text` with its first letter in lower case, as strerror's texts
// begin a sentence and ours continue one.
std::string lower_first(std::string text) {
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z')
    text[0] = static_cast<char>(text[0] - 'A' + 'a');
  return text;
}

} // namespace

std::string bind_problem(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos)
    return "no port in the address";
  auto host = address.substr(0, colon);
  auto port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0)
    return "cannot resolve host \"" + host + "\"";
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard{found, freeaddrinfo};
  std::string problem = "no address to bind";
  for (auto* ai = found; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) {
      problem = lower_first(std::strerror(errno));
      continue;
    }
    // As gRPC does: SO_REUSEADDR lets a restarted broker bind past
    // TIME_WAIT connections, but never past a live listener.
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    bool bound =
        ::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 1) == 0;
    if (!bound)
      problem = lower_first(std::strerror(errno));
    ::close(fd);
    if (bound)
      return {};
  }
  return problem;
}

std::string cannot_listen_message(const std::string& address) {
  auto problem = bind_problem(address);
  if (problem.empty())
    problem = "the address could not be bound";
  return "cannot listen on " + address + ": " + problem;
}

std::string_view host_of(std::string_view address) {
  auto colon = address.rfind(':');
  return colon == std::string_view::npos ? address : address.substr(0, colon);
}

bool is_loopback_host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host == "localhost")
    return true;
  std::string text{host};
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&v6) ||
           (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
  return false;
}

std::vector<std::string> exposure_warnings(const broker_config& cfg) {
  std::vector<std::string> result;
  bool grpc_exposed = !is_loopback_host(host_of(cfg.listen));
  if (grpc_exposed && !cfg.tls.enabled())
    result.push_back("the gRPC listener " + cfg.listen +
                     " is not on loopback and has no TLS: traffic and tokens "
                     "travel in clear text (set [tls] cert and key)");
  if (cfg.metrics.enabled() && !cfg.metrics.tls &&
      !is_loopback_host(host_of(cfg.metrics.listen)))
    result.push_back("the metrics listener " + cfg.metrics.listen +
                     " is not on loopback and has no TLS: scrapes travel in "
                     "clear text (set [tls], and [metrics] tls = true)");
  if (grpc_exposed && !cfg.auth.enabled)
    result.push_back("the gRPC listener " + cfg.listen +
                     " is not on loopback and auth is off: anyone who "
                     "reaches " +
                     cfg.listen +
                     " may publish, subscribe and delete groups (set [auth] "
                     "enabled = true)");
  return result;
}

} // namespace tb
