#include "net/tls_store.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/tls_credentials.hpp"
#include "net/tls_material.hpp"

namespace tb {

using tls_detail::owned;
using tls_detail::refuse_passphrase;

namespace {

// Returns every certificate in `pem`, in order (an empty stack if none).
owned<STACK_OF(X509)> certificates(const std::string& pem) {
  owned<STACK_OF(X509)> result{sk_X509_new_null()};
  owned<BIO> bio{BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))};
  while (auto* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr))
    sk_X509_push(result.get(), cert);
  ERR_clear_error();
  return result;
}

// Returns the expiry of `cert` in Unix seconds (0 if it cannot be read).
int64_t expiry_of(const X509* cert) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1)
    return 0;
  return static_cast<int64_t>(timegm(&tm));
}

// Returns the subject of `cert` in RFC 2253 form.
std::string subject_of(X509* cert) {
  owned<BIO> bio{BIO_new(BIO_s_mem())};
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0,
                     XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  auto size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

// Returns the directory for the private copy: $RUNTIME_DIRECTORY (systemd's
// RuntimeDirectory=), else $TMPDIR, else /tmp.
std::string private_parent() {
  for (const char* name : {"RUNTIME_DIRECTORY", "TMPDIR"})
    if (const char* dir = std::getenv(name); dir != nullptr && *dir != '\0')
      return dir;
  return "/tmp";
}

} // namespace

namespace {

// Parses the checked `files` into a material.
std::shared_ptr<tls_store::material> parse_material(const tls_files& files,
                                                    const tls_config& cfg) {
  auto m = std::make_shared<tls_store::material>();
  auto certs = certificates(files.cert_pem);
  m->leaf.reset(sk_X509_shift(certs.get()));
  m->chain = std::move(certs);
  owned<BIO> bio{BIO_new_mem_buf(files.key_pem.data(),
                                 static_cast<int>(files.key_pem.size()))};
  m->key.reset(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, refuse_passphrase, nullptr));
  ERR_clear_error();
  m->not_after = m->leaf ? expiry_of(m->leaf.get()) : 0;
  m->identity_pem = files.cert_pem;
  if (!m->identity_pem.empty() && m->identity_pem.back() != '\n')
    m->identity_pem += '\n';
  m->identity_pem += files.key_pem;
  if (cfg.mutual()) {
    m->client_ca_path = cfg.client_ca;
    m->client_ca_pem = files.client_ca_pem;
    m->client_store.reset(X509_STORE_new());
    m->client_names.reset(sk_X509_NAME_new_null());
    auto cas = certificates(files.client_ca_pem);
    for (int i = 0; i < sk_X509_num(cas.get()); ++i) {
      auto* ca = sk_X509_value(cas.get(), i);
      X509_STORE_add_cert(m->client_store.get(), ca);
      sk_X509_NAME_push(m->client_names.get(),
                        X509_NAME_dup(X509_get_subject_name(ca)));
    }
    ERR_clear_error();
  }
  return m;
}

} // namespace

// -- tls_store ----------------------------------------------------------------

tls_store::tls_store() = default;

tls_store::~tls_store() {
  discard_private_copy();
}

void tls_store::discard_private_copy() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (dir_.empty())
    return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  dir_.clear();
}

std::string tls_store::load(const tls_config& cfg) {
  tls_files files;
  if (auto problem = load_tls_files(cfg, files); !problem.empty())
    return problem;
  auto m = parse_material(files, cfg);
  std::lock_guard<std::mutex> guard{mutex_};
  if (auto problem = write_private_copy("identity.pem", m->identity_pem);
      !problem.empty())
    return problem;
  // gRPC sends the names of these CAs to clients in the handshake, so that a
  // client can tell which CA the broker wants (it verifies them itself).
  if (cfg.mutual())
    if (auto problem = write_private_copy("client_ca.pem", m->client_ca_pem);
        !problem.empty())
      return problem;
  current_ = std::move(m);
  cfg_ = cfg;
  return {};
}

std::string tls_store::reload(const tls_config& cfg) {
  auto old = config();
  if (cfg.enabled() != old.enabled())
    return "turning TLS on or off takes a restart";
  if (!cfg.enabled())
    return {};
  if (cfg.mutual() != old.mutual())
    return "setting or removing tls.client_ca takes a restart";
  return load(cfg);
}

std::string tls_store::write_private_copy(const std::string& file,
                                          const std::string& pem) {
  if (dir_.empty()) {
    auto pattern = private_parent() + "/tinybroker-tls.XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr)
      return "tls: cannot write the private copy of the key in " +
             private_parent() + ": " + std::strerror(errno);
    dir_ = pattern;
  }
  auto target = dir_ + "/" + file;
  auto temp = target + ".new";
  auto fail = [&](const char* what) {
    auto text = std::string{"tls: cannot "} + what + " " + temp + ": " +
                std::strerror(errno);
    std::remove(temp.c_str());
    return text;
  };
  auto* out = std::fopen(temp.c_str(), "wb");
  if (out == nullptr)
    return fail("create");
  chmod(temp.c_str(), S_IRUSR | S_IWUSR);
  auto written = std::fwrite(pem.data(), 1, pem.size(), out);
  if (std::fclose(out) != 0 || written != pem.size())
    return fail("write");
  // gRPC reads the file or its successor, never half of either.
  if (std::rename(temp.c_str(), target.c_str()) != 0)
    return fail("rename");
  return {};
}

std::shared_ptr<const tls_store::material> tls_store::current() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return current_;
}

int64_t tls_store::not_after() const {
  auto m = current();
  return m ? m->not_after : 0;
}

tls_config tls_store::config() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return cfg_;
}

std::string tls_store::verify_client(const std::string& leaf_pem,
                                     const std::string& chain_pem) const {
  auto m = current();
  if (!m || !m->client_store)
    return "no client CA is loaded";
  auto leaf_stack = certificates(leaf_pem);
  owned<X509> leaf{sk_X509_shift(leaf_stack.get())};
  auto untrusted = certificates(chain_pem);
  if (!leaf) {
    leaf.reset(sk_X509_shift(untrusted.get()));
    if (!leaf)
      return "no client certificate";
  }
  owned<X509_STORE_CTX> ctx{X509_STORE_CTX_new()};
  if (!ctx || X509_STORE_CTX_init(ctx.get(), m->client_store.get(), leaf.get(),
                                  untrusted.get()) != 1) {
    ERR_clear_error();
    return "cannot check the certificate (out of memory)";
  }
  // As OpenSSL checks a client for a TLS server (extended key usage too).
  X509_STORE_CTX_set_default(ctx.get(), "ssl_client");
  auto verified = X509_verify_cert(ctx.get()) == 1;
  auto err = X509_STORE_CTX_get_error(ctx.get());
  auto* bad = X509_STORE_CTX_get_current_cert(ctx.get());
  ERR_clear_error();
  if (verified)
    return {};
  auto who = subject_of(bad != nullptr ? bad : leaf.get());
  auto because = std::string{X509_verify_cert_error_string(err)};
  switch (err) {
  case X509_V_ERR_CERT_HAS_EXPIRED:
    return "certificate " + who + " has expired (not after " +
           utc_timestamp(expiry_of(bad != nullptr ? bad : leaf.get())) + ")";
  case X509_V_ERR_CERT_NOT_YET_VALID:
    return "certificate " + who + " is not valid yet";
  case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
  case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
  case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
  case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
  case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    return "certificate " + who + " is not signed by a CA in client_ca " +
           m->client_ca_path + " (" + because + ")";
  default:
    return "certificate " + who + ": " + because;
  }
}

std::string tls_expiry_warning(const std::string& path, int64_t not_after,
                               int64_t now) {
  if (not_after <= 0)
    return {};
  if (not_after <= now)
    return "tls: the server certificate " + path + " expired on " +
           utc_timestamp(not_after) +
           "; clients refuse it. Renew it, then send SIGHUP";
  auto left = not_after - now;
  if (left > tls_expiry_warning_days * 86400)
    return {};
  auto days = left / 86400;
  return "tls: the server certificate " + path + " expires on " +
         utc_timestamp(not_after) + " (in " +
         (days == 0 ? std::string{"less than a day"}
                    : std::to_string(days) + (days == 1 ? " day" : " days")) +
         "). Renew it, then send SIGHUP";
}

std::string utc_timestamp(int64_t seconds) {
  auto t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

} // namespace tb