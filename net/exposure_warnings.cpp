#include "net/exposure_warnings.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace tb {

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
