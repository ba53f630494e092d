#include "net/auth_gate.hpp"

#include "net/peer_identity.hpp"

namespace tb {

auth_gate::auth_gate(const auth_config& cfg)
    : enabled_(cfg.enabled), table_(std::make_shared<token_table>(cfg)) {
  // nop
}

std::shared_ptr<const token_table> auth_gate::table() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return table_;
}

auth_outcome auth_gate::authenticate(const grpc::ServerContextBase& ctx) {
  if (!enabled_)
    return {};
  std::string_view authorization;
  auto& metadata = ctx.client_metadata();
  if (auto i = metadata.find("authorization"); i != metadata.end())
    authorization = std::string_view{i->second.data(), i->second.size()};
  return authenticate(authorization, peer_certificate_subject(ctx));
}

auth_outcome auth_gate::authenticate(std::string_view authorization,
                                     std::string_view cert_subject) {
  if (!enabled_)
    return {};
  auto result = table()->authenticate(authorization, cert_subject);
  if (result.error)
    ++counters_.unauthenticated;
  return result;
}

error_info auth_gate::authorize_admin(const grpc::ServerContextBase& ctx,
                                      const char* call) {
  auto outcome = authenticate(ctx);
  if (outcome.error)
    return outcome.error;
  if (may_administer(outcome.grant))
    return {};
  ++counters_.admin_denied;
  return make_error_info(ec::permission_denied,
                         describe_client(outcome.grant) + " may not call " +
                             call + " (the admin calls need admin = true)");
}

error_info auth_gate::reload(const auth_config& cfg) {
  if (cfg.enabled != enabled_)
    return make_error_info(
        ec::invalid_request,
        std::string{"auth.enabled changed to "} +
            (cfg.enabled ? "true" : "false") +
            "; turning auth on or off takes a restart, the tokens stay as "
            "they were");
  auto next = std::make_shared<const token_table>(cfg);
  std::lock_guard<std::mutex> guard{mutex_};
  table_ = std::move(next);
  return {};
}

} // namespace tb
