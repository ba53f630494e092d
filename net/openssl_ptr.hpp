// Owning pointers to the OpenSSL objects of the broker's TLS code
// (net/tls_credentials.cpp, net/tls_store.cpp, net/tls_listeners.cpp,
// net/cluster_probe.cpp): one
// deleter for them all.
//
//   tb::openssl_ptr<BIO> bio{BIO_new_mem_buf(pem.data(), size)};

#pragma once

#include <memory>

#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace tb {

/// Frees an OpenSSL object with its own free function.
struct openssl_free {
  void operator()(BIO* x) const {
    BIO_free(x);
  }
  void operator()(X509* x) const {
    X509_free(x);
  }
  void operator()(EVP_PKEY* x) const {
    EVP_PKEY_free(x);
  }
  void operator()(STACK_OF(X509) * x) const {
    sk_X509_pop_free(x, X509_free);
  }
  void operator()(STACK_OF(X509_NAME) * x) const {
    sk_X509_NAME_pop_free(x, X509_NAME_free);
  }
  void operator()(X509_STORE* x) const {
    X509_STORE_free(x);
  }
  void operator()(X509_STORE_CTX* x) const {
    X509_STORE_CTX_free(x);
  }
  void operator()(SSL_CTX* x) const {
    SSL_CTX_free(x);
  }
  void operator()(SSL* x) const {
    SSL_free(x);
  }
};

/// An owning pointer to an OpenSSL object.
template <class T>
using openssl_ptr = std::unique_ptr<T, openssl_free>;

} // namespace tb
