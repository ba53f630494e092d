// What the gRPC and the metrics listener make of a tls_store: the gRPC
// credentials (a file watcher over the private copy, and a verifier of
// client certificates that logs why it refuses one) and the OpenSSL context
// of the metrics listener (the current identity on each handshake).

#include "net/tls_store.hpp"

#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/support/status.h>
#include <grpcpp/support/string_ref.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "log/rate_limiter.hpp"
#include "net/log.hpp"
#include "net/tls_material.hpp"

namespace tb {

// -- the listeners ------------------------------------------------------------

namespace {

// Checks the client certificates of the gRPC listener against the store's
// current client CA, and logs why one is refused.
class client_verifier final
    : public grpc::experimental::ExternalCertificateVerifier {
public:
  explicit client_verifier(std::weak_ptr<const tls_store> store)
      : store_(std::move(store)) {
    // nop
  }

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)>,
              grpc::Status* sync_status) override {
    auto text = [](grpc::string_ref x) {
      return std::string(x.data(), x.size());
    };
    auto store = store_.lock(); // gone once the broker stopped
    auto problem =
        store ? store->verify_client(text(request->peer_cert()),
                                     text(request->peer_cert_full_chain()))
              : std::string{"the broker is stopping"};
    if (problem.empty()) {
      *sync_status = grpc::Status::OK;
    } else {
      log_refusal(problem);
      *sync_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                  "client certificate refused: " + problem);
    }
    return true; // answered synchronously
  }

  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest*) override {
    // nop: every check is synchronous
  }

private:
  // Logs a refusal, at most 5 lines in 10 s (a client can cause them).
  void log_refusal(const std::string& problem) {
    std::lock_guard<std::mutex> guard{mutex_};
    auto verdict = limiter_.admit("client certificate refused",
                                  log::rate_limiter::clock_type::now());
    if (verdict.ended)
      log::warn(std::to_string(verdict.ended->count) +
                " more client certificates refused (not logged) in the last " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                   verdict.ended->window)
                                   .count()) +
                " s");
    if (verdict.write)
      log::warn("client certificate refused: " + problem);
  }

  // Weak: gRPC may keep its verifier past the broker's stop.
  std::weak_ptr<const tls_store> store_;
  std::mutex mutex_;
  log::rate_limiter limiter_;
};

} // namespace

std::shared_ptr<grpc::ServerCredentials> tls_store::grpc_credentials() {
  std::string path;
  std::string client_ca;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    path = dir_ + "/identity.pem";
    if (cfg_.mutual())
      client_ca = dir_ + "/client_ca.pem";
  }
  // The key and the chain are one file, replaced by a rename: gRPC never
  // pairs a new key with an old certificate. With client_ca, gRPC watches a
  // copy of it too, only to send the CAs' names in the handshake.
  auto provider =
      std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
          path, path, client_ca, tls_refresh_seconds);
  grpc::experimental::TlsServerCredentialsOptions options{provider};
  options.watch_identity_key_cert_pairs();
  if (!client_ca.empty())
    options.watch_root_certs();
  if (config().mutual()) {
    // Verified here rather than by gRPC, so that a refusal is logged with
    // its reason; the client must still prove it holds the key.
    options.set_cert_request_type(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
    options.set_certificate_verifier(
        grpc::experimental::ExternalCertificateVerifier::Create<
            client_verifier>(weak_from_this()));
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

int tls_store::on_handshake(ssl_st* ssl, void* arg) {
  auto m = static_cast<tls_store*>(arg)->current();
  if (!m || !m->leaf || !m->key)
    return 0;
  if (SSL_use_cert_and_key(ssl, m->leaf.get(), m->key.get(), m->chain.get(),
                           1) != 1) {
    ERR_clear_error();
    return 0;
  }
  if (m->client_store) {
    SSL_set1_verify_cert_store(ssl, m->client_store.get());
    SSL_set_client_CA_list(ssl, SSL_dup_CA_list(m->client_names.get()));
  }
  return 1;
}

bool tls_store::setup_ssl_context(ssl_ctx_st& ctx) {
  auto m = current();
  if (!m || !m->leaf || !m->key)
    return false;
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION |
                                SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  SSL_CTX_set_default_passwd_cb(&ctx, tls_detail::refuse_passphrase);
  // The identity of the load, replaced on each handshake by the current one.
  bool ok = SSL_CTX_use_cert_and_key(&ctx, m->leaf.get(), m->key.get(),
                                     m->chain.get(), 1) == 1;
  SSL_CTX_set_cert_cb(&ctx, &tls_store::on_handshake, this);
  if (ok && m->client_store) {
    SSL_CTX_set1_verify_cert_store(&ctx, m->client_store.get());
    SSL_CTX_set_client_CA_list(&ctx, SSL_dup_CA_list(m->client_names.get()));
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       nullptr);
  }
  ERR_clear_error();
  return ok;
}

} // namespace tb
