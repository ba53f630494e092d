#include "auth/token_table.hpp"

#include <cctype>

#include <openssl/crypto.h>
#include <openssl/sha.h>

namespace tb {

namespace {

constexpr std::string_view token_prefix = "token:";
constexpr std::string_view cert_prefix = "cert:";

// Returns the token of an `authorization` value `Bearer <token>` (the
// scheme compares without case), or nothing if it has another form.
std::optional<std::string_view> bearer_token(std::string_view value) {
  constexpr std::string_view scheme = "bearer ";
  if (value.size() <= scheme.size())
    return std::nullopt;
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(value[i])) != scheme[i])
      return std::nullopt;
  auto token = value.substr(scheme.size());
  while (!token.empty() && token.front() == ' ')
    token.remove_prefix(1);
  if (token.empty())
    return std::nullopt;
  return token;
}

auth_outcome refused(std::string text) {
  auth_outcome result;
  result.error = make_error_info(ec::unauthenticated, std::move(text));
  return result;
}

} // namespace

std::string sha256_hex(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(),
         digest);
  static constexpr char hex[] = "0123456789abcdef";
  std::string result;
  result.reserve(2 * SHA256_DIGEST_LENGTH);
  for (auto byte : digest) {
    result += hex[byte >> 4];
    result += hex[byte & 0x0f];
  }
  return result;
}

token_table::token_table(const auth_config& cfg)
    : enabled_(cfg.enabled), tokens_(cfg.tokens) {
  // nop
}

access_grant token_table::grant_of(const token_config& token) const {
  access_grant grant;
  grant.enforced = true;
  grant.token = token.name;
  grant.publish = token.publish;
  grant.subscribe = token.subscribe;
  grant.groups = token.groups;
  grant.any_group = token.any_group;
  grant.admin = token.admin;
  return grant;
}

auth_outcome token_table::authenticate(std::string_view authorization,
                                       std::string_view cert_subject) const {
  if (!enabled_)
    return {};
  if (!authorization.empty()) {
    auto secret = bearer_token(authorization);
    if (!secret)
      return refused("the authorization metadata is not \"Bearer <token>\"");
    auto hash = sha256_hex(*secret);
    // Compare with every token, without stopping at a match, so that the
    // time taken says nothing about which token (or how much of one)
    // matched.
    const token_config* found = nullptr;
    for (auto& token : tokens_)
      if (token.secret_sha256.size() == hash.size() &&
          CRYPTO_memcmp(token.secret_sha256.data(), hash.data(), hash.size()) ==
              0)
        found = &token;
    if (found == nullptr)
      return refused("the token is not valid");
    auth_outcome result;
    result.grant = grant_of(*found);
    result.credential = std::string{token_prefix} + hash;
    return result;
  }
  if (!cert_subject.empty()) {
    for (auto& token : tokens_)
      if (!token.cert_subject.empty() && token.cert_subject == cert_subject) {
        auth_outcome result;
        result.grant = grant_of(token);
        result.credential =
            std::string{cert_prefix} + std::string{cert_subject};
        return result;
      }
    return refused("no token stands for the client certificate \"" +
                   std::string{cert_subject} + "\"");
  }
  return refused("no token: send \"authorization: Bearer <token>\" metadata");
}

std::optional<access_grant>
token_table::lookup(std::string_view credential) const {
  if (!enabled_)
    return access_grant{};
  if (credential.substr(0, token_prefix.size()) == token_prefix) {
    auto hash = credential.substr(token_prefix.size());
    for (auto& token : tokens_)
      if (token.secret_sha256 == hash)
        return grant_of(token);
  } else if (credential.substr(0, cert_prefix.size()) == cert_prefix) {
    auto subject = credential.substr(cert_prefix.size());
    for (auto& token : tokens_)
      if (!token.cert_subject.empty() && token.cert_subject == subject)
        return grant_of(token);
  }
  return std::nullopt;
}

} // namespace tb
