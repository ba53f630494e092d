#include "net/tls_credentials.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <grpcpp/security/server_credentials.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "net/openssl_ptr.hpp"

namespace tb {

namespace {

// Owning pointers for the OpenSSL objects used here.
using bio_ptr = openssl_ptr<BIO>;
using x509_ptr = openssl_ptr<X509>;
using pkey_ptr = openssl_ptr<EVP_PKEY>;

// Reads the file `path` (the `[tls]` key `what`) into `out`; returns "" or
// the problem.
std::string read_file(const std::string& what, const std::string& path,
                      std::string& out) {
  auto fail = [&](const std::string& reason) {
    return "tls: cannot read " + what + " " + path + ": " + reason;
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return fail("it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return fail("read error");
  out = text.str();
  return {};
}

// Returns a memory BIO over `pem` (which must outlive it).
bio_ptr memory_bio(const std::string& pem) {
  return bio_ptr{BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))};
}

// Returns the first certificate in `pem`, or nullptr.
x509_ptr first_certificate(const std::string& pem) {
  auto bio = memory_bio(pem);
  x509_ptr cert{PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)};
  ERR_clear_error();
  return cert;
}

// A passphrase callback that gives none: an encrypted key fails to load
// instead of prompting on the terminal.
int no_passphrase(char*, int, int, void*) {
  return -1;
}

// Returns the private key in `pem`, or nullptr (also for encrypted keys).
pkey_ptr private_key(const std::string& pem) {
  auto bio = memory_bio(pem);
  pkey_ptr key{
      PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr)};
  ERR_clear_error();
  return key;
}

} // namespace

std::string load_tls_files(const tls_config& cfg, tls_files& out) {
  if (!cfg.enabled())
    return {};
  if (auto problem = read_file("cert", cfg.cert, out.cert_pem);
      !problem.empty())
    return problem;
  if (auto problem = read_file("key", cfg.key, out.key_pem); !problem.empty())
    return problem;
  if (cfg.mutual())
    if (auto problem = read_file("client_ca", cfg.client_ca, out.client_ca_pem);
        !problem.empty())
      return problem;
  auto cert = first_certificate(out.cert_pem);
  if (!cert)
    return "tls: " + cfg.cert + " holds no PEM certificate";
  auto key = private_key(out.key_pem);
  if (!key)
    return "tls: " + cfg.key +
           " holds no PEM private key (or an encrypted one)";
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return "tls: key " + cfg.key + " does not match the certificate " +
           cfg.cert;
  }
  if (cfg.mutual() && !first_certificate(out.client_ca_pem))
    return "tls: " + cfg.client_ca + " holds no PEM certificate";
  return {};
}

std::string check_tls_files(const tls_config& cfg) {
  tls_files files;
  return load_tls_files(cfg, files);
}

std::shared_ptr<grpc::ServerCredentials>
make_server_credentials(const tls_config& cfg, std::string& problem) {
  if (!cfg.enabled())
    return grpc::InsecureServerCredentials();
  tls_files files;
  problem = load_tls_files(cfg, files);
  if (!problem.empty())
    return nullptr;
  grpc::SslServerCredentialsOptions options{
      cfg.mutual() ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                   : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE};
  options.pem_root_certs = files.client_ca_pem;
  options.pem_key_cert_pairs.push_back({files.key_pem, files.cert_pem});
  return grpc::SslServerCredentials(options);
}

bool setup_server_ssl_context(ssl_ctx_st& ctx, const tls_config& cfg) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION |
                                SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  SSL_CTX_set_default_passwd_cb(&ctx, no_passphrase);
  bool ok = SSL_CTX_use_certificate_chain_file(&ctx, cfg.cert.c_str()) == 1 &&
            SSL_CTX_use_PrivateKey_file(&ctx, cfg.key.c_str(),
                                        SSL_FILETYPE_PEM) == 1 &&
            SSL_CTX_check_private_key(&ctx) == 1;
  if (ok && cfg.mutual()) {
    ok = SSL_CTX_load_verify_locations(&ctx, cfg.client_ca.c_str(), nullptr) ==
         1;
    if (ok) {
      // Names the acceptable CAs to the client, as gRPC does.
      SSL_CTX_set_client_CA_list(
          &ctx, SSL_load_client_CA_file(cfg.client_ca.c_str()));
      SSL_CTX_set_verify(
          &ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
  }
  ERR_clear_error();
  return ok;
}

} // namespace tb
