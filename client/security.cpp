#include "client/security.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

namespace tb::client {

namespace {

// Returns the content of `path`, described as `what` in errors.
std::string read_whole_file(const std::string& path, const std::string& what) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    throw security_error("cannot read " + what + " \"" + path +
                         "\": " + std::strerror(errno));
  std::string text{std::istreambuf_iterator<char>{in},
                   std::istreambuf_iterator<char>{}};
  if (in.bad())
    throw security_error("cannot read " + what + " \"" + path +
                         "\": " + std::strerror(errno));
  return text;
}

// Returns the variable `name` through `lookup`; unset when missing or "".
std::optional<std::string> lookup_var(const env_lookup& lookup,
                                      const char* name) {
  const char* value = lookup ? lookup(name) : std::getenv(name);
  if (value == nullptr || *value == '\0')
    return std::nullopt;
  return std::string{value};
}

// Returns `given` if set, else `env`, else "".
std::string pick(const std::optional<std::string>& given,
                 const std::optional<std::string>& env) {
  return given ? *given : env.value_or("");
}

// Frees a BIO, an X509 and an EVP_PKEY.
struct openssl_free {
  void operator()(BIO* p) const {
    BIO_free(p);
  }
  void operator()(X509* p) const {
    X509_free(p);
  }
  void operator()(EVP_PKEY* p) const {
    EVP_PKEY_free(p);
  }
};

// Returns a memory BIO over `text`.
std::unique_ptr<BIO, openssl_free> memory_bio(const std::string& text) {
  return std::unique_ptr<BIO, openssl_free>{
      BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))};
}

// A PEM password callback that gives none: an encrypted key fails to read
// instead of prompting on the terminal.
int no_password(char*, int, int, void*) {
  return 0;
}

} // namespace

security_sources security_sources_from_env(const env_lookup& lookup) {
  security_sources result;
  result.token = lookup_var(lookup, token_env);
  result.token_file = lookup_var(lookup, token_file_env);
  result.ca_file = lookup_var(lookup, ca_env);
  result.cert_file = lookup_var(lookup, cert_env);
  result.key_file = lookup_var(lookup, key_env);
  result.server_name = lookup_var(lookup, server_name_env);
  return result;
}

security_options resolve_security(const security_sources& given,
                                  const security_sources& env) {
  if (given.token && given.token_file)
    throw security_error("--token and --token-file are both given; use one");
  security_options result;
  const auto& tokens = (given.token || given.token_file) ? given : env;
  if (tokens.token && tokens.token_file)
    throw security_error(std::string{token_env} + " and " + token_file_env +
                         " are both set; use one");
  if (tokens.token)
    result.token = *tokens.token;
  else if (tokens.token_file)
    result.token = read_token_file(*tokens.token_file);
  result.ca_file = pick(given.ca_file, env.ca_file);
  result.cert_file = pick(given.cert_file, env.cert_file);
  result.key_file = pick(given.key_file, env.key_file);
  result.server_name = pick(given.server_name, env.server_name);
  check_security(result);
  return result;
}

security_options security_from_env() {
  return resolve_security({}, security_sources_from_env());
}

std::string read_token_file(const std::string& path) {
  auto text = read_whole_file(path, "token file");
  auto end = text.find_last_not_of(" \t\r\n\v\f");
  text.erase(end == std::string::npos ? 0 : end + 1);
  if (text.empty())
    throw security_error("token file \"" + path + "\" holds no token");
  return text;
}

void check_security(const security_options& options) {
  if (!options.cert_file.empty() && options.key_file.empty())
    throw security_error("a client certificate (--cert, TINYBROKER_CERT) "
                         "needs its key (--key, TINYBROKER_KEY)");
  if (options.cert_file.empty() && !options.key_file.empty())
    throw security_error("a client key (--key, TINYBROKER_KEY) needs its "
                         "certificate (--cert, TINYBROKER_CERT)");
  if (!options.server_name.empty() && !options.tls())
    throw security_error("a TLS server name (--tls-server-name, "
                         "TINYBROKER_TLS_SERVER_NAME) needs TLS (--ca or "
                         "--cert)");
  for (unsigned char c : options.token)
    if (c < 0x21 || c > 0x7e)
      throw security_error("the token may hold only visible ASCII "
                           "characters (no spaces, control characters or "
                           "non-ASCII)");
}

std::string read_pem_file(const std::string& path, const std::string& what) {
  auto text = read_whole_file(path, what);
  if (text.find("-----BEGIN") == std::string::npos)
    throw security_error(what + " \"" + path +
                         "\" is not PEM (no \"-----BEGIN\" line)");
  return text;
}

void check_key_pair(const std::string& cert_pem, const std::string& key_pem,
                    const std::string& cert_file, const std::string& key_file) {
  std::unique_ptr<X509, openssl_free> cert{PEM_read_bio_X509(
      memory_bio(cert_pem).get(), nullptr, no_password, nullptr)};
  std::unique_ptr<EVP_PKEY, openssl_free> key{PEM_read_bio_PrivateKey(
      memory_bio(key_pem).get(), nullptr, no_password, nullptr)};
  bool match = cert && key && X509_check_private_key(cert.get(), key.get());
  ERR_clear_error();
  if (!cert)
    throw security_error("certificate file \"" + cert_file +
                         "\" holds no certificate that can be read");
  if (!key)
    throw security_error("key file \"" + key_file +
                         "\" holds no private key that can be read (it may "
                         "be encrypted, which is not supported)");
  if (!match)
    throw security_error("the client key \"" + key_file +
                         "\" does not belong to the certificate \"" +
                         cert_file +
                         "\" (--cert and --key, TINYBROKER_CERT and "
                         "TINYBROKER_KEY, must be a pair)");
}

std::shared_ptr<grpc::ChannelCredentials>
make_channel_credentials(const security_options& options) {
  check_security(options);
  if (!options.tls())
    return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!options.ca_file.empty())
    ssl.pem_root_certs = read_pem_file(options.ca_file, "CA file");
  if (!options.cert_file.empty()) {
    ssl.pem_cert_chain = read_pem_file(options.cert_file, "certificate file");
    ssl.pem_private_key = read_pem_file(options.key_file, "key file");
    check_key_pair(ssl.pem_cert_chain, ssl.pem_private_key, options.cert_file,
                   options.key_file);
  }
  return grpc::SslCredentials(ssl);
}

} // namespace tb::client
