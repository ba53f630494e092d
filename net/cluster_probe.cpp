#include "net/cluster_probe.hpp"

#include <cerrno>
#include <cstring>
#include <set>

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/event_based_actor.hpp>
#include <caf/node_id.hpp>

#include "actors/protocol.hpp"
#include "net/openssl_ptr.hpp"

namespace tb {

namespace {

using probe_clock = std::chrono::steady_clock;

// Closes a socket when it goes out of scope.
struct probe_socket {
  int fd = -1;
  ~probe_socket() {
    if (fd >= 0)
      ::close(fd);
  }
};

// Reads a big-endian number of `n` bytes from `p`.
uint64_t probe_big_endian(const unsigned char* p, std::size_t n) {
  uint64_t value = 0;
  for (std::size_t i = 0; i < n; ++i)
    value = value << 8 | p[i];
  return value;
}

// Waits until `fd` is ready for `events` or `deadline` passed; true if
// ready.
bool probe_wait(int fd, short events, probe_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - probe_clock::now());
    if (left.count() <= 0)
      return false;
    pollfd p{fd, events, 0};
    auto n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0)
      return true;
    if (n < 0 && errno != EINTR)
      return false;
  }
}

// Connects `fd` to `ai` before `deadline`; "" or why not.
std::string probe_connect(int fd, const addrinfo& ai,
                          probe_clock::time_point deadline) {
  if (::connect(fd, ai.ai_addr, ai.ai_addrlen) == 0)
    return {};
  if (errno != EINPROGRESS)
    return std::strerror(errno);
  if (!probe_wait(fd, POLLOUT, deadline))
    return "no connection within the timeout";
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  return err == 0 ? std::string{} : std::strerror(err);
}

// Reads up to 16 bytes from `fd` before `deadline`.
std::string probe_read_plain(int fd, probe_clock::time_point deadline) {
  std::string first;
  char buf[16];
  while (first.size() < sizeof buf && probe_wait(fd, POLLIN, deadline)) {
    auto n = ::recv(fd, buf, sizeof buf - first.size(), 0);
    if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN)))
      break;
    if (n > 0)
      first.append(buf, static_cast<std::size_t>(n));
  }
  return first;
}

// Returns a client context that presents and verifies with `tls`'s files,
// or null if they cannot be read (CAF's dial then says why).
openssl_ptr<SSL_CTX> probe_tls_context(const cluster_probe_tls& tls) {
  openssl_ptr<SSL_CTX> ctx{SSL_CTX_new(TLS_client_method())};
  if (!ctx ||
      SSL_CTX_use_certificate_chain_file(ctx.get(), tls.cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key.c_str(),
                                  SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_load_verify_locations(ctx.get(), tls.ca.c_str(), nullptr) != 1)
    return nullptr;
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  return ctx;
}

// Runs `step` (an SSL call on `ssl`) until it succeeds; waits on `fd` as
// OpenSSL asks. Returns its result (> 0) or the failure's (<= 0).
template <class Step>
int probe_tls_step(SSL* ssl, int fd, probe_clock::time_point deadline,
                   Step step) {
  for (;;) {
    auto rc = step();
    if (rc > 0)
      return rc;
    auto err = SSL_get_error(ssl, rc);
    short events = err == SSL_ERROR_WANT_READ    ? POLLIN
                   : err == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                 : 0;
    if (events == 0 || !probe_wait(fd, events, deadline))
      return rc;
  }
}

// Makes a TLS handshake on `fd` with `tls` and checks the first 16 bytes
// read through it; "" if they are a cluster node's, and for a handshake
// that fails (CAF's dial then says why).
std::string probe_tls(int fd, const cluster_probe_tls& tls,
                      probe_clock::time_point deadline) {
  auto ctx = probe_tls_context(tls);
  if (!ctx) {
    ERR_clear_error();
    return {};
  }
  openssl_ptr<SSL> ssl{SSL_new(ctx.get())};
  if (!ssl || SSL_set_fd(ssl.get(), fd) != 1) {
    ERR_clear_error();
    return {};
  }
  if (probe_tls_step(ssl.get(), fd, deadline,
                     [&] { return SSL_connect(ssl.get()); }) <= 0) {
    ERR_clear_error();
    return {};
  }
  std::string first;
  char buf[16];
  while (first.size() < sizeof buf) {
    auto n = probe_tls_step(ssl.get(), fd, deadline, [&] {
      return SSL_read(ssl.get(), buf,
                      static_cast<int>(sizeof buf - first.size()));
    });
    if (n <= 0)
      break;
    first.append(buf, static_cast<std::size_t>(n));
  }
  ERR_clear_error();
  return check_cluster_greeting(first);
}

} // namespace

std::string check_cluster_greeting(std::string_view first) {
  // gRPC's TLS servers send nothing and close a connection that did not
  // ask for HTTP/2 (ALPN): that port, too, is likely a gRPC one.
  constexpr const char* hint = " (is it a broker's gRPC port? peers name "
                               "each node's [cluster] listen address)";
  if (first.size() < 16)
    return "it sent " + std::to_string(first.size()) +
           " bytes and no cluster handshake" + hint;
  auto* p = reinterpret_cast<const unsigned char*>(first.data());
  auto payload = probe_big_endian(p + 4, 4);
  auto version = probe_big_endian(p + 8, 8);
  if (p[0] != 0 || payload == 0 || payload > (1u << 20) || version == 0)
    return std::string{"its first bytes are not a cluster handshake"} + hint;
  return {};
}

cluster_probe_result probe_cluster_peer(const std::string& host, uint16_t port,
                                        std::chrono::milliseconds timeout,
                                        const cluster_probe_tls* tls) {
  auto deadline = probe_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  auto service = std::to_string(port);
  if (auto rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
      rc != 0)
    return {false, "cannot resolve " + host + ": " + ::gai_strerror(rc)};
  std::string why;
  for (auto* ai = found; ai != nullptr; ai = ai->ai_next) {
    probe_socket sock{::socket(ai->ai_family,
                               ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                               ai->ai_protocol)};
    if (sock.fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    why = probe_connect(sock.fd, *ai, deadline);
    if (!why.empty())
      continue;
    ::freeaddrinfo(found);
    // A cluster node speaks first: read its header's first 16 bytes.
    if (tls == nullptr)
      return {true,
              check_cluster_greeting(probe_read_plain(sock.fd, deadline))};
    return {true, probe_tls(sock.fd, *tls, deadline)};
  }
  ::freeaddrinfo(found);
  return {false, why};
}

namespace {

// The behavior of the checked dialer (see spawn_checked_dialer).
caf::behavior checked_dialer_impl(caf::event_based_actor* self,
                                  caf::actor dialer,
                                  std::chrono::milliseconds timeout,
                                  std::optional<cluster_probe_tls> tls) {
  return {
      [self](caf::link_atom, const caf::actor& owner) { self->link_to(owner); },
      [self, dialer, timeout, tls](caf::connect_atom atom, std::string& host,
                                   uint16_t port) -> caf::result<caf::message> {
        auto found =
            probe_cluster_peer(host, port, timeout, tls ? &*tls : nullptr);
        auto address = host + ":" + std::to_string(port);
        if (!found.connected)
          return make_caf_error(ec::invalid_request,
                                address + ": " + found.why);
        if (!found.why.empty())
          return make_caf_error(ec::invalid_request,
                                address +
                                    " is not a cluster node: " + found.why);
        return self->delegate(dialer, atom, std::move(host), port);
      },
  };
}

} // namespace

caf::actor spawn_checked_dialer(caf::actor_system& sys, caf::actor dialer,
                                std::chrono::milliseconds timeout,
                                std::optional<cluster_probe_tls> tls) {
  return sys.spawn<caf::detached>(checked_dialer_impl, std::move(dialer),
                                  timeout, std::move(tls));
}

} // namespace tb
