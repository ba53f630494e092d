// TLS of the broker's listeners (spec 10): the PEM files of `[tls]`, read
// and checked once at start, and what the gRPC and the metrics listener
// make of them.

#pragma once

#include <memory>
#include <string>

#include "config/tls_config.hpp"

namespace grpc {
class ServerCredentials;
} // namespace grpc

struct ssl_ctx_st; // OpenSSL's SSL_CTX

namespace tb {

/// The contents of the `[tls]` files, read and checked by `load_tls_files`.
struct tls_files {
  /// The server's certificate chain (PEM).
  std::string cert_pem;
  /// The private key of the certificate (PEM).
  std::string key_pem;
  /// The CA certificates client certificates are checked against (PEM);
  /// empty without `client_ca`.
  std::string client_ca_pem;
};

/// Reads the files `cfg` names into `out` and checks them with OpenSSL;
/// returns "" or the one line that explains the first problem:
/// `tls: cannot read cert|key|client_ca PATH: REASON`,
/// `tls: PATH holds no PEM certificate`,
/// `tls: PATH holds no PEM private key (or an encrypted one)` or
/// `tls: key KEY does not match the certificate CERT`.
/// With TLS off it reads nothing and returns "".
std::string load_tls_files(const tls_config& cfg, tls_files& out);

/// Returns `load_tls_files`' verdict on `cfg`, dropping the contents: what
/// the broker checks before it starts anything.
std::string check_tls_files(const tls_config& cfg);

/// Returns the credentials of the gRPC listener: insecure when `cfg` has no
/// TLS, else TLS with the certificate and key and, with `client_ca`, a
/// client certificate that must be presented and verify
/// (`GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY`). Returns
/// nullptr and sets `problem` (as `load_tls_files`) if the files are bad.
std::shared_ptr<grpc::ServerCredentials>
make_server_credentials(const tls_config& cfg, std::string& problem);

/// Sets up the OpenSSL server context `ctx` of the metrics listener from
/// `cfg`: TLS 1.2 at least, the certificate chain and key and, with
/// `client_ca`, client certificates required and verified against it.
/// Returns false if a file does not load.
bool setup_server_ssl_context(ssl_ctx_st& ctx, const tls_config& cfg);

} // namespace tb
