#include "client/detail/tls_probe.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string_view>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

namespace tb::client::detail {

namespace {

// Frees OpenSSL objects.
struct ssl_free {
  void operator()(SSL_CTX* p) const {
    SSL_CTX_free(p);
  }
  void operator()(SSL* p) const {
    SSL_free(p);
  }
  void operator()(X509* p) const {
    X509_free(p);
  }
  void operator()(BIO* p) const {
    BIO_free(p);
  }
};
template <class T>
using ssl_ptr = std::unique_ptr<T, ssl_free>;

// Closes a socket.
struct socket_guard {
  int fd = -1;
  ~socket_guard() {
    if (fd >= 0)
      ::close(fd);
  }
};

// Splits "HOST:PORT" (or "[V6]:PORT", after an optional "dns:///",
// "ipv4:" or "ipv6:") into host and port; false when it is not of that form.
bool split_address(std::string address, std::string& host, std::string& port) {
  for (std::string_view scheme : {"dns:///", "ipv4:", "ipv6:"})
    if (address.rfind(scheme, 0) == 0)
      address.erase(0, scheme.size());
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    return false;
  host = address.substr(0, colon);
  port = address.substr(colon + 1);
  if (host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return host.find('/') == std::string::npos;
}

// Returns a connected TCP socket to `host`:`port` (-1 when none could be
// made within `timeout`), with `timeout` on each read and write.
int connect_tcp(const std::string& host, const std::string& port,
                std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0)
    return -1;
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list{found, freeaddrinfo};
  for (auto* ai = found; ai != nullptr; ai = ai->ai_next) {
    socket_guard sock{::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                               ai->ai_protocol)};
    if (sock.fd < 0)
      continue;
    int flags = fcntl(sock.fd, F_GETFL);
    fcntl(sock.fd, F_SETFL, flags | O_NONBLOCK);
    if (::connect(sock.fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS)
        continue;
      pollfd pfd{sock.fd, POLLOUT, 0};
      int error = 0;
      socklen_t len = sizeof error;
      if (poll(&pfd, 1, static_cast<int>(timeout.count())) != 1 ||
          getsockopt(sock.fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 ||
          error != 0)
        continue;
    }
    fcntl(sock.fd, F_SETFL, flags);
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    setsockopt(sock.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(sock.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    auto fd = sock.fd;
    sock.fd = -1;
    return fd;
  }
  return -1;
}

// Returns `name` in RFC 2253 form.
std::string name_text(const X509_NAME* name) {
  ssl_ptr<BIO> bio{BIO_new(BIO_s_mem())};
  X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  auto len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

// Returns `time` as OpenSSL prints it ("Jan  2 00:00:00 2020 GMT").
std::string time_text(const ASN1_TIME* time) {
  ssl_ptr<BIO> bio{BIO_new(BIO_s_mem())};
  ASN1_TIME_print(bio.get(), time);
  char* data = nullptr;
  auto len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

// Returns true if `host` is an IPv4 or IPv6 address.
bool is_ip(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

} // namespace

probe_result run_probe(const std::string& address,
                       const security_options& security,
                       std::chrono::milliseconds timeout) {
  probe_result result;
  std::string host, port;
  if (!split_address(address, host, port))
    return result;
  ssl_ptr<SSL_CTX> ctx{SSL_CTX_new(TLS_client_method())};
  if (!ctx)
    return result;
  // Verified after the handshake, so that it goes on to the broker's
  // verdict on the client certificate.
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  if (!security.ca_file.empty())
    SSL_CTX_load_verify_locations(ctx.get(), security.ca_file.c_str(), nullptr);
  else
    SSL_CTX_set_default_verify_paths(ctx.get());
  if (!security.cert_file.empty() &&
      (SSL_CTX_use_certificate_chain_file(ctx.get(),
                                          security.cert_file.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(ctx.get(), security.key_file.c_str(),
                                   SSL_FILETYPE_PEM) != 1)) {
    ERR_clear_error();
    return result;
  }
  static const unsigned char alpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(ctx.get(), alpn, sizeof alpn);
  socket_guard sock{connect_tcp(host, port, timeout)};
  if (sock.fd < 0)
    return result;
  result.reached = true;
  ssl_ptr<SSL> ssl{SSL_new(ctx.get())};
  SSL_set_fd(ssl.get(), sock.fd);
  auto name = security.server_name.empty() ? host : security.server_name;
  if (!is_ip(name))
    SSL_set_tlsext_host_name(ssl.get(), name.c_str());
  ERR_clear_error();
  if (SSL_connect(ssl.get()) != 1) {
    auto reason = ERR_GET_REASON(ERR_peek_last_error());
    result.not_tls = reason == SSL_R_WRONG_VERSION_NUMBER ||
                     reason == SSL_R_PACKET_LENGTH_TOO_LONG;
    ERR_clear_error();
    return result;
  }
  result.handshake = true;
  result.verify = SSL_get_verify_result(ssl.get());
  if (auto* names = SSL_get_client_CA_list(ssl.get()); names != nullptr)
    for (int i = 0; i < sk_X509_NAME_num(names); ++i)
      result.client_ca_names.push_back(name_text(sk_X509_NAME_value(names, i)));
  char byte[64];
  int got = SSL_read(ssl.get(), byte, sizeof byte);
  if (got <= 0) {
    auto error = SSL_get_error(ssl.get(), got);
    result.closed_after_handshake =
        error == SSL_ERROR_ZERO_RETURN || error == SSL_ERROR_SSL ||
        (error == SSL_ERROR_SYSCALL && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  ERR_clear_error();
  return result;
}

std::string refusal_detail(const std::string& cert_file,
                           const std::vector<std::string>& accepted) {
  ssl_ptr<BIO> bio{BIO_new_file(cert_file.c_str(), "r")};
  if (!bio)
    return {};
  ssl_ptr<X509> cert{PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)};
  if (!cert)
    return {};
  if (X509_cmp_current_time(X509_get0_notAfter(cert.get())) < 0)
    return "it expired on " + time_text(X509_get0_notAfter(cert.get())) +
           "; use a renewed certificate";
  if (X509_cmp_current_time(X509_get0_notBefore(cert.get())) > 0)
    return "it is not valid before " +
           time_text(X509_get0_notBefore(cert.get()));
  auto issuer = name_text(X509_get_issuer_name(cert.get()));
  if (accepted.empty())
    return {};
  std::string names;
  for (auto& name : accepted) {
    if (name == issuer)
      return {};
    names += (names.empty() ? "\"" : ", \"") + name + "\"";
  }
  return "it is issued by \"" + issuer +
         "\", and the broker accepts client certificates issued by " + names +
         " only; use a certificate from its client CA";
}

} // namespace tb::client::detail
