// The token and TLS flags that tinybroker-cli and tinybroker-bench share:
// `--token`, `--token-file`, `--ca`, `--cert`, `--key` and
// `--tls-server-name`, each beating its TINYBROKER_* environment variable
// (client/security.hpp resolves them).

#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "client/security.hpp"

namespace tb::tools {

/// Adds option `name` to `app`, storing the (last) value given into
/// `target`; returns the option.
inline CLI::Option* add_security_source(CLI::App& app, const std::string& name,
                                        std::optional<std::string>& target,
                                        const std::string& type,
                                        const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [&target](const std::string& text) { target = text; }, help)
      ->type_name(type)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

/// Adds the token and TLS flags to `app`, storing into `sources`; `--token`
/// and `--token-file` exclude each other. A certificate without its key is
/// refused later by `client::resolve_security`, since either may come from
/// the environment.
inline void add_security_flags(CLI::App& app,
                               client::security_sources& sources) {
  auto* token = add_security_source(
      app, "--token", sources.token, "TOKEN",
      "bearer token sent on every call (env TINYBROKER_TOKEN; prefer "
      "--token-file: arguments are visible to other users)");
  auto* file = add_security_source(
      app, "--token-file", sources.token_file, "FILE",
      "read the bearer token from FILE, trailing whitespace stripped (env "
      "TINYBROKER_TOKEN_FILE)");
  token->excludes(file);
  add_security_source(app, "--ca", sources.ca_file, "FILE",
                      "TLS: verify the broker with this CA certificate, PEM "
                      "(env TINYBROKER_CA)");
  add_security_source(app, "--cert", sources.cert_file, "FILE",
                      "mutual TLS: client certificate, PEM; implies TLS (env "
                      "TINYBROKER_CERT)");
  add_security_source(app, "--key", sources.key_file, "FILE",
                      "mutual TLS: the certificate's private key, PEM (env "
                      "TINYBROKER_KEY)");
  add_security_source(app, "--tls-server-name", sources.server_name, "NAME",
                      "TLS: the name the broker's certificate must carry, if "
                      "not the host of --server (env "
                      "TINYBROKER_TLS_SERVER_NAME)");
}

} // namespace tb::tools
