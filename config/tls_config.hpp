// TLS settings of the broker's listeners (spec 10), as plain values.

#pragma once

#include <string>
#include <tuple>

namespace tb {

/// The `[tls]` table: the server certificate and key, and optionally the CA
/// that client certificates must be signed by (mutual TLS).
struct tls_config {
  /// Path of the server certificate chain (PEM); empty means no TLS.
  std::string cert;
  /// Path of the server's private key (PEM).
  std::string key;
  /// Path of the CA bundle (PEM) client certificates are checked against;
  /// when set, every client must present a valid certificate.
  std::string client_ca;

  /// Returns true if the listeners speak TLS.
  bool enabled() const noexcept {
    return !cert.empty();
  }

  /// Returns true if clients must present a certificate.
  bool mutual() const noexcept {
    return !client_ca.empty();
  }
};

/// Returns true if `x` and `y` hold the same TLS settings.
inline bool operator==(const tls_config& x, const tls_config& y) {
  return std::tie(x.cert, x.key, x.client_ca) ==
         std::tie(y.cert, y.key, y.client_ca);
}

/// Returns true if `x` and `y` differ in any TLS setting.
inline bool operator!=(const tls_config& x, const tls_config& y) {
  return !(x == y);
}

} // namespace tb
