// Reads the [auth] table (spec 10; docs/security.md):
//
//   [auth]
//   enabled = true                  # default: true once the table exists
//   [[auth.tokens]]
//   name = "orders-service"         # in logs and counters; 1-128 of
//   [A-Za-z0-9_-] secret_env = "ORDERS_TOKEN"     # or secret_file, secret,
//   secret_sha256 cert_subject = "CN=orders,O=Example"   # optional, with
//   mutual TLS publish = ["orders.>"] subscribe = ["orders.eu.>"] groups =
//   ["billing"]            # optional: absent = any group admin = false
//
// Only the SHA-256 of each secret is kept in memory.

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "auth/token_table.hpp"
#include "config/toml_reader.hpp"
#include "routing/pattern.hpp"

namespace tb::detail {

namespace {

// The shortest secret accepted: shorter ones are guessable.
constexpr size_t min_secret_bytes = 16;

// Strips trailing whitespace (a file's final newline).
std::string strip_trailing_space(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.pop_back();
  return text;
}

// Returns the sources of a token's secret that `table` names.
std::vector<std::string> secret_sources(const toml::value& table) {
  std::vector<std::string> found;
  for (auto key : {"secret", "secret_file", "secret_env", "secret_sha256"})
    if (table.is_table() && table.as_table().count(key) != 0)
      found.emplace_back(key);
  return found;
}

// Reads one [[auth.tokens]] entry into `token`.
void read_token(reader& r, const toml::value& v, const std::string& path,
                token_config& token) {
  auto patterns = [&r](std::vector<std::string>& out) {
    return [&r, &out](const toml::value& v, const std::string& path) {
      if (!v.is_array())
        return r.bad(v, path, "an array of patterns like [\"orders.>\"]");
      for (auto& item : v.as_array()) {
        if (!item.is_string())
          return r.bad(item, path, "a pattern string");
        auto& text = item.as_string().str;
        if (auto err = validate_pattern(text, name_limits{}))
          return r.bad(item, path, "a valid pattern", err.text);
        out.push_back(text);
      }
    };
  };
  auto group_names = [&r, &token](const toml::value& v,
                                  const std::string& path) {
    token.any_group = false;
    if (!v.is_array())
      return r.bad(v, path, "an array of group names like [\"billing\"]");
    for (auto& item : v.as_array()) {
      if (!item.is_string() || !is_name(item.as_string().str))
        return r.bad(item, path, "a group name: 1 to 128 of A-Z a-z 0-9 _ -");
      token.groups.push_back(item.as_string().str);
    }
  };
  std::string secret;
  auto with_secret = [&](const toml::value& v, const std::string& path,
                         const std::string& text) {
    if (text.size() < min_secret_bytes)
      return r.bad_secret(v, path,
                          "the secret has " + std::to_string(text.size()) +
                              " bytes; a token needs at least " +
                              std::to_string(min_secret_bytes) +
                              " (e.g. `openssl rand -hex 32`)");
    token.secret_sha256 = sha256_hex(text);
  };
  auto plain = [&](const toml::value& v, const std::string& path) {
    if (!v.is_string())
      return r.bad_secret(v, path, "expected a string");
    with_secret(v, path, v.as_string().str);
  };
  auto from_file = [&](const toml::value& v, const std::string& path) {
    if (!v.is_string() || v.as_string().str.empty())
      return r.bad(v, path, "a file path");
    std::filesystem::path file{r.resolve(v.as_string().str)};
    std::ifstream in{file, std::ios::binary};
    if (!in)
      return r.bad(v, path, "",
                   "cannot read " + file.string() + ": " +
                       std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    with_secret(v, path, strip_trailing_space(text.str()));
  };
  auto from_env = [&](const toml::value& v, const std::string& path) {
    if (!v.is_string() || v.as_string().str.empty())
      return r.bad(v, path, "an environment variable name");
    auto* value = std::getenv(v.as_string().str.c_str());
    if (value == nullptr || *value == '\0')
      return r.bad(v, path, "",
                   "the environment variable " + v.as_string().str +
                       " is not set");
    with_secret(v, path, strip_trailing_space(value));
  };
  auto hashed = [&](const toml::value& v, const std::string& path) {
    auto ok = v.is_string() && v.as_string().str.size() == 64 &&
              std::all_of(v.as_string().str.begin(), v.as_string().str.end(),
                          [](char c) { return std::isxdigit(c); });
    if (!ok)
      return r.bad(v, path,
                   "64 hex digits: the SHA-256 of the token (`printf %s "
                   "\"$TOKEN\" | sha256sum`)");
    token.secret_sha256 = v.as_string().str;
    for (auto& c : token.secret_sha256)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  r.read_table(
      v, path,
      {{"name",
        r.text(token.name, "a name: 1 to 128 of A-Z a-z 0-9 _ -", is_name)},
       {"secret", plain},
       {"secret_file", from_file},
       {"secret_env", from_env},
       {"secret_sha256", hashed},
       {"cert_subject",
        r.text(token.cert_subject, "a certificate subject like \"CN=orders\"",
               [](std::string_view t) { return !t.empty(); })},
       {"publish", patterns(token.publish)},
       {"subscribe", patterns(token.subscribe)},
       {"groups", group_names},
       {"admin", r.boolean(token.admin)}},
      nullptr);
  if (!v.is_table())
    return;
  auto sources = secret_sources(v);
  if (v.as_table().count("name") == 0)
    r.bad(v, path, "a key like name = \"orders-service\"",
          "a token needs a name");
  if (sources.size() > 1)
    r.bad(v, path, "one of secret, secret_file, secret_env, secret_sha256",
          "the token has " + sources[0] + " and " + sources[1]);
  if (sources.empty() && token.cert_subject.empty())
    r.bad(v, path,
          "secret_env, secret_file, secret_sha256 or secret, or a "
          "cert_subject",
          "the token has no secret");
}

} // namespace

void read_auth(reader& r, const toml::value& v, const std::string& path,
               auth_config& out) {
  out.enabled = true;
  auto tokens = [&](const toml::value& list, const std::string& sub) {
    if (!list.is_array())
      return r.bad(list, sub, "an array of tables: [[auth.tokens]]");
    std::set<std::string> names, secrets, subjects;
    for (auto& item : list.as_array()) {
      token_config token;
      read_token(r, item, sub, token);
      if (!token.name.empty() && !names.insert(token.name).second)
        r.bad(item, sub, "", "two tokens are named \"" + token.name + "\"");
      if (!token.secret_sha256.empty() &&
          !secrets.insert(token.secret_sha256).second)
        r.bad(item, sub, "",
              "token \"" + token.name +
                  "\" has the same secret as another token");
      if (!token.cert_subject.empty() &&
          !subjects.insert(token.cert_subject).second)
        r.bad(item, sub, "",
              "token \"" + token.name +
                  "\" has the same cert_subject as "
                  "another token");
      out.tokens.push_back(std::move(token));
    }
  };
  r.read_table(v, path,
               {{"enabled", r.boolean(out.enabled)}, {"tokens", tokens}},
               nullptr);
}

} // namespace tb::detail
