// How the tinybroker clients authenticate and protect their channel: a
// bearer token sent as `authorization: Bearer <token>` on every call and
// stream, and TLS (verifying the broker with a CA, and mutual TLS with a
// client certificate). Shared by the C++ client library, tinybroker-cli,
// tinybroker-bench and tinybroker-soak (docs/client.md, "Security").
//
//   tb::client::security_options security;
//   security.token = "s3cret";
//   security.ca_file = "/etc/tinybroker/ca.pem";
//   tb::client::connection conn{"broker.example:7400", security};

#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <grpcpp/grpcpp.h>

namespace tb::client {

/// The environment variable holding the bearer token.
inline constexpr const char* token_env = "TINYBROKER_TOKEN";
/// The environment variable naming a file that holds the bearer token.
inline constexpr const char* token_file_env = "TINYBROKER_TOKEN_FILE";
/// The environment variable naming the CA certificate file (PEM).
inline constexpr const char* ca_env = "TINYBROKER_CA";
/// The environment variable naming the client certificate file (PEM).
inline constexpr const char* cert_env = "TINYBROKER_CERT";
/// The environment variable naming the client key file (PEM).
inline constexpr const char* key_env = "TINYBROKER_KEY";
/// The environment variable holding the TLS server name override.
inline constexpr const char* server_name_env = "TINYBROKER_TLS_SERVER_NAME";

/// How a client authenticates and protects its channel; the default is a
/// plain (insecure) channel without a token.
struct security_options {
  /// The bearer token, sent as `authorization: Bearer <token>` on every
  /// call and stream (over TLS or not); empty sends none.
  std::string token;
  /// The PEM file of the CA that signed the broker's certificate; setting
  /// it turns TLS on. Empty with TLS on trusts the system's CAs.
  std::string ca_file;
  /// The PEM file of the client's certificate chain for mutual TLS; setting
  /// it turns TLS on and needs `key_file`.
  std::string cert_file;
  /// The PEM file of the private key of `cert_file`.
  std::string key_file;
  /// The name the broker's certificate must carry when it differs from the
  /// host of the address (TLS only); empty checks the address's host.
  std::string server_name;

  /// Returns true when the channel speaks TLS: a CA or a client certificate
  /// is set.
  bool tls() const {
    return !ca_file.empty() || !cert_file.empty();
  }
};

/// Security settings that cannot be used: an unreadable or non-PEM file, a
/// certificate without its key, a bad token. `what()` is one sentence that
/// names the file or setting and never contains the token.
class security_error : public std::runtime_error {
public:
  /// Creates the error with `message`.
  explicit security_error(const std::string& message)
      : std::runtime_error(message) {}
};

/// Security settings as a command line or the environment gave them,
/// before any file is read; each one is unset when not given.
struct security_sources {
  /// The token itself (`--token`, TINYBROKER_TOKEN).
  std::optional<std::string> token;
  /// A file holding the token (`--token-file`, TINYBROKER_TOKEN_FILE).
  std::optional<std::string> token_file;
  /// The CA file (`--ca`, TINYBROKER_CA).
  std::optional<std::string> ca_file;
  /// The client certificate file (`--cert`, TINYBROKER_CERT).
  std::optional<std::string> cert_file;
  /// The client key file (`--key`, TINYBROKER_KEY).
  std::optional<std::string> key_file;
  /// The TLS server name (`--tls-server-name`, TINYBROKER_TLS_SERVER_NAME).
  std::optional<std::string> server_name;
};

/// Looks up an environment variable; nullptr when unset (like getenv).
using env_lookup = std::function<const char*(const char*)>;

/// Reads the TINYBROKER_* variables through `lookup` (getenv when empty);
/// a variable set to "" counts as unset.
security_sources security_sources_from_env(const env_lookup& lookup = {});

/// Combines `given` (the command line) with `env`: each setting given beats
/// its variable, and a token given either way (token or token file) beats
/// both token variables. Reads the token file and checks the result (see
/// `check_security`); throws `security_error` if the token and the token
/// file are both given (or both set in the environment), the file cannot be
/// read, or the settings do not fit together.
security_options resolve_security(const security_sources& given,
                                  const security_sources& env);

/// Returns `resolve_security({}, security_sources_from_env())`: the
/// settings of the TINYBROKER_* environment variables.
security_options security_from_env();

/// Returns the token in the file at `path` with trailing whitespace (the
/// newline) stripped; throws `security_error` if the file cannot be read or
/// holds no token.
std::string read_token_file(const std::string& path);

/// Checks settings without reading files: a client certificate needs its
/// key and vice versa, a server name needs TLS, and a token may hold only
/// visible ASCII characters. Throws `security_error`.
void check_security(const security_options& options);

/// Returns the PEM file at `path`, described as `what` ("CA file") in
/// errors; throws `security_error` if it cannot be read or has no
/// "-----BEGIN" line.
std::string read_pem_file(const std::string& path, const std::string& what);

/// Checks that PEM text `key_pem` is the private key of the (first)
/// certificate in `cert_pem`, read from `key_file` and `cert_file` (named in
/// errors); throws `security_error` if either cannot be read or they do not
/// belong together, before any connection is tried.
void check_key_pair(const std::string& cert_pem, const std::string& key_pem,
                    const std::string& cert_file, const std::string& key_file);

/// Returns TLS credentials with the PEM files of `options` read, or
/// insecure ones when `options.tls()` is false. Throws `security_error`
/// (also for a client key that does not belong to its certificate).
std::shared_ptr<grpc::ChannelCredentials>
make_channel_credentials(const security_options& options);

} // namespace tb::client
