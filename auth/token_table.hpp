// The broker's tokens (spec 10): who a request's credentials name, and what
// that client may do.

#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/access_grant.hpp"
#include "config/auth_config.hpp"
#include "routing/error.hpp"

namespace tb {

/// Returns the SHA-256 of `text` as 64 lower-case hex digits.
std::string sha256_hex(std::string_view text);

/// Who a request's credentials name.
struct auth_outcome {
  /// What the client may do; meaningful only without `error`.
  access_grant grant;
  /// What identifies the client across reloads: `token:<sha256>` for a
  /// bearer token, `cert:<subject>` for a client certificate; empty when
  /// auth is off.
  std::string credential;
  /// UNAUTHENTICATED with the reason, or no error.
  error_info error;
};

/// An immutable set of tokens, built from the `[auth]` config; replaced as
/// a whole on reload. Thread-safe (const).
class token_table {
public:
  /// Builds the table of `cfg`; an empty, disabled table allows everything.
  explicit token_table(const auth_config& cfg = {});

  /// Returns true if requests must present credentials.
  bool enabled() const noexcept {
    return enabled_;
  }

  /// Returns the number of tokens.
  size_t size() const noexcept {
    return tokens_.size();
  }

  /// Authenticates a request from its `authorization` metadata value (empty
  /// if absent) and the subject of its verified client certificate (empty
  /// if none). A bearer token, when given, decides: a wrong one is refused
  /// even with a good certificate. Secrets are compared in constant time
  /// against every token, and never appear in the error.
  auth_outcome authenticate(std::string_view authorization,
                            std::string_view cert_subject) const;

  /// Returns the grant that `credential` (from an earlier `authenticate`)
  /// has in this table, or nothing if its token is gone (revoked).
  std::optional<access_grant> lookup(std::string_view credential) const;

private:
  // Returns the grant of `token`.
  access_grant grant_of(const token_config& token) const;

  bool enabled_ = false;
  std::vector<token_config> tokens_;
};

} // namespace tb
