#include "net/peer_identity.hpp"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/auth_context.h>
#include <grpcpp/server_context.h>

namespace tb {

std::string peer_certificate_subject(const grpc::ServerContextBase& ctx) {
  auto auth = ctx.auth_context();
  if (!auth)
    return {};
  auto values = auth->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME);
  if (values.empty())
    return {};
  return std::string(values.front().data(), values.front().size());
}

} // namespace tb
