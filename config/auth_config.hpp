// Token authentication settings (spec 10), as plain values.

#pragma once

#include <string>
#include <tuple>
#include <vector>

namespace tb {

/// One `[[auth.tokens]]` entry: a named identity and what it may do.
struct token_config {
  /// The token's name: it appears in logs and counters, never the secret.
  std::string name;
  /// The SHA-256 of the secret, as 64 lower-case hex digits; the loader
  /// computes it from `secret`, `secret_file` or `secret_env`, or reads it
  /// from `secret_sha256`. Empty when only `cert_subject` identifies it.
  std::string secret_sha256;
  /// A client certificate subject that stands for this token under mutual
  /// TLS (for example `CN=orders,O=Example`); empty if none.
  std::string cert_subject;
  /// Topic patterns it may publish to.
  std::vector<std::string> publish;
  /// Topic patterns it may subscribe to (fan-out and groups).
  std::vector<std::string> subscribe;
  /// The groups it may join; `any_group` when the key is absent.
  std::vector<std::string> groups;
  /// True if the `groups` key was absent: any group may be joined.
  bool any_group = true;
  /// True if it may call CreateGroup, DeleteGroup, ListGroups and Stats.
  bool admin = false;
};

/// Returns true if `x` and `y` are equal in every member.
inline bool operator==(const token_config& x, const token_config& y) {
  return std::tie(x.name, x.secret_sha256, x.cert_subject, x.publish,
                  x.subscribe, x.groups, x.any_group, x.admin) ==
         std::tie(y.name, y.secret_sha256, y.cert_subject, y.publish,
                  y.subscribe, y.groups, y.any_group, y.admin);
}

/// The `[auth]` table.
struct auth_config {
  /// True if every call and stream must present a token (or a client
  /// certificate that stands for one); off by default.
  bool enabled = false;
  /// The tokens.
  std::vector<token_config> tokens;
};

/// Returns true if `x` and `y` hold the same auth settings.
inline bool operator==(const auth_config& x, const auth_config& y) {
  return x.enabled == y.enabled && x.tokens == y.tokens;
}

/// Returns true if `x` and `y` differ in any auth setting.
inline bool operator!=(const auth_config& x, const auth_config& y) {
  return !(x == y);
}

} // namespace tb
