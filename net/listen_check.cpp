#include "net/listen_check.hpp"

#include <cerrno>
#include <cstring>
#include <memory>

#include <netdb.h>
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

} // namespace tb
