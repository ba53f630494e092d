// The OpenSSL side of client/tls_diagnosis.hpp: a short TLS handshake of
// the client's own to the broker's address, with the same files, that tells
// what gRPC's message leaves open (whether the port speaks TLS, why the
// broker's certificate fails verification, whether the broker closed the
// connection after the handshake), and why a client certificate was
// refused. Internal: include client/tls_diagnosis.hpp instead.

#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <openssl/x509.h>

#include "client/security.hpp"

namespace tb::client::detail {

/// What a handshake probe found.
struct probe_result {
  /// The TCP connection was made.
  bool reached = false;
  /// The port answered a ClientHello with something that is not TLS.
  bool not_tls = false;
  /// The TLS handshake completed.
  bool handshake = false;
  /// The verification of the broker's certificate with the CA given.
  long verify = X509_V_OK;
  /// The broker closed the connection after the handshake, before its first
  /// bytes (its verdict on the client certificate, or the lack of one).
  bool closed_after_handshake = false;
  /// The CA names the broker says it accepts client certificates from.
  std::vector<std::string> client_ca_names;
};

/// Connects to `address` (`HOST:PORT`, or `[V6]:PORT`, after an optional
/// "dns:///", "ipv4:" or "ipv6:") and shakes hands with the files of
/// `security`, verifying the broker's certificate only after the handshake
/// so that it goes on to the broker's verdict on the client certificate;
/// waits at most `timeout` for each step.
probe_result run_probe(const std::string& address,
                       const security_options& security,
                       std::chrono::milliseconds timeout);

/// Returns why the broker refused the client certificate in `cert_file`,
/// given the CA names it accepts (`accepted`, possibly none): expired, not
/// valid yet, or issued by another CA; "" when none of these.
std::string refusal_detail(const std::string& cert_file,
                           const std::vector<std::string>& accepted);

} // namespace tb::client::detail
