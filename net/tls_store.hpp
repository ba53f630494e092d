// The TLS identity of a running broker (spec 10, issue 26): the `[tls]`
// certificate, key and client CA that both listeners serve, replaced on
// SIGHUP without a restart.
//
//   SIGHUP -> reload(cfg): read + check the files --bad--> nothing changes
//                                  |ok
//                                  v
//              swap the parsed pair (metrics: OpenSSL cert callback, per
//              handshake) and rewrite the private copy gRPC watches
//              (FileWatcherCertificateProvider, re-read every second)
//
// Open connections keep the certificate they were set up with; a new
// handshake gets the new one (the gRPC listener within a second). Client
// certificates are checked here, against the current client CA, so that a
// refusal is logged with its reason (expired, or signed by a foreign CA).

#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "config/tls_config.hpp"

namespace grpc {
class ServerCredentials;
} // namespace grpc

struct ssl_ctx_st; // OpenSSL's SSL_CTX
struct ssl_st;     // OpenSSL's SSL

namespace tb {

/// How often the gRPC listener re-reads its private copy of the identity:
/// a reload reaches new gRPC handshakes within this many seconds.
inline constexpr unsigned tls_refresh_seconds = 1;

/// Certificates expiring within this many days are warned about.
inline constexpr int64_t tls_expiry_warning_days = 14;

/// The current TLS identity of the broker's listeners. Thread-safe; share
/// it with `std::shared_ptr` (the listeners' callbacks keep it alive).
class tls_store : public std::enable_shared_from_this<tls_store> {
public:
  /// The parsed contents of the files (defined in the source).
  struct material;

  tls_store();

  /// Removes the private copy of the identity.
  ~tls_store();

  tls_store(const tls_store&) = delete;
  tls_store& operator=(const tls_store&) = delete;

  /// Loads the files `cfg` names and writes the private copy gRPC reads;
  /// returns "" or the one line that explains the problem (as
  /// `load_tls_files`, or `tls: cannot write the private copy ...`).
  std::string load(const tls_config& cfg);

  /// Replaces the identity with the files `cfg` names; returns "" or why
  /// nothing changed: a file that does not load, a key that does not match
  /// its certificate, or a change that takes a restart (turning TLS or
  /// `client_ca` on or off).
  std::string reload(const tls_config& cfg);

  /// Returns the gRPC listener's credentials: the current identity (re-read
  /// every `tls_refresh_seconds`) and, with `client_ca`, a client
  /// certificate that must be presented and verify against the current CA.
  /// Call after `load` succeeded.
  std::shared_ptr<grpc::ServerCredentials> grpc_credentials();

  /// Sets up the metrics listener's OpenSSL context `ctx` so that each
  /// handshake gets the identity current at that moment (TLS 1.2 at least,
  /// client certificates as `grpc_credentials`). Returns false if `load`
  /// did not succeed. The store must outlive `ctx`.
  bool setup_ssl_context(ssl_ctx_st& ctx);

  /// Removes the private copy of the identity (the destructor does too):
  /// call it once the gRPC listener is gone, since gRPC may keep its
  /// credentials, and so the store, until the process ends.
  void discard_private_copy();

  /// Returns the time the server certificate expires (Unix seconds), or 0
  /// before `load`.
  int64_t not_after() const;

  /// Returns the settings of the identity in use.
  tls_config config() const;

  /// Checks a client certificate against the current client CA: returns ""
  /// if it verifies, else the reason, e.g. `certificate has expired (not
  /// after 2020-01-02T00:00:00Z)` or `not signed by a CA in client_ca
  /// PATH`. `leaf` and `chain` are PEM (the chain may repeat the leaf).
  std::string verify_client(const std::string& leaf,
                            const std::string& chain) const;

private:
  // Installs the current identity on a metrics handshake (OpenSSL's cert
  // callback; `store` is the tls_store).
  static int on_handshake(ssl_st* ssl, void* store);

  std::shared_ptr<const material> current() const;
  std::string write_private_copy(const std::string& file,
                                 const std::string& pem);

  mutable std::mutex mutex_;
  std::shared_ptr<const material> current_;
  tls_config cfg_;
  // A directory of this process (mode 0700) holding identity.pem, the key
  // and the certificate chain in one file, replaced by a rename.
  std::string dir_;
};

/// Returns the warning about a server certificate `path` that expires at
/// `not_after` (Unix seconds) when it is `now`: that it expired, or expires
/// within `tls_expiry_warning_days`; "" if it is further away.
std::string tls_expiry_warning(const std::string& path, int64_t not_after,
                               int64_t now);

/// Formats Unix seconds as `2026-12-04T22:48:28Z`.
std::string utc_timestamp(int64_t seconds);

} // namespace tb
