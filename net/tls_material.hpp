// The parsed TLS files of a tls_store (net/tls_store.hpp), shared by its
// two sources: tls_store.cpp (loading, checking) and tls_listeners.cpp (what
// the gRPC and the metrics listener make of them). Not for other users.

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "net/openssl_ptr.hpp"
#include "net/tls_store.hpp"

namespace tb {

namespace tls_detail {

/// An owning pointer to an OpenSSL object of a material.
template <class T>
using owned = openssl_ptr<T>;

/// A passphrase callback that gives none: an encrypted key fails to load
/// instead of prompting on the terminal.
inline int refuse_passphrase(char*, int, int, void*) {
  return -1;
}

} // namespace tls_detail

/// The parsed contents of the `[tls]` files.
struct tls_store::material {
  // The key and the certificate chain in one PEM text (gRPC's copy).
  std::string identity_pem;
  tls_detail::owned<X509> leaf;
  tls_detail::owned<EVP_PKEY> key;
  // The certificates after the leaf.
  tls_detail::owned<STACK_OF(X509)> chain;
  // With client_ca: the CAs client certificates are checked against, and
  // their names as sent to clients.
  tls_detail::owned<X509_STORE> client_store;
  tls_detail::owned<STACK_OF(X509_NAME)> client_names;
  // The client_ca file's certificates (gRPC's copy, for the names it sends).
  std::string client_ca_pem;
  // The client_ca file, for messages.
  std::string client_ca_path;
  int64_t not_after = 0;
};

} // namespace tb
