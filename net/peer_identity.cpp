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

namespace {

// Returns the value of hex digit `c`, or -1.
int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

// Returns the problem of `text` as a name, or "": not UTF-8, or a control
// character (C0, DEL or C1) at some byte offset.
std::string name_problem(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    auto lead = static_cast<unsigned char>(text[i]);
    size_t length = lead < 0x80           ? 1
                    : (lead >> 5) == 0x6  ? 2
                    : (lead >> 4) == 0xE  ? 3
                    : (lead >> 3) == 0x1E ? 4
                                          : 0;
    if (length == 0 || i + length > text.size())
      return "is not UTF-8 (byte " + std::to_string(i) + ")";
    uint32_t code = length == 1 ? lead : lead & (0x7F >> length);
    for (size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80)
        return "is not UTF-8 (byte " + std::to_string(i + k) + ")";
      code = (code << 6) | (next & 0x3F);
    }
    static constexpr uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < smallest[length] || code > 0x10FFFF ||
        (code >= 0xD800 && code <= 0xDFFF))
      return "is not UTF-8 (byte " + std::to_string(i) + ")";
    if (code < 0x20 || (code >= 0x7F && code <= 0x9F))
      return "holds a control character (byte " + std::to_string(i) + ")";
    i += length;
  }
  return {};
}

} // namespace

error_info decode_client_name(std::string_view value, std::string& name) {
  name.clear();
  std::string decoded;
  decoded.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '%' && i + 2 < value.size() &&
        hex_value(value[i + 1]) >= 0 && hex_value(value[i + 2]) >= 0) {
      decoded.push_back(static_cast<char>(hex_value(value[i + 1]) * 16 +
                                          hex_value(value[i + 2])));
      i += 2;
    } else {
      decoded.push_back(value[i]);
    }
  }
  if (decoded.size() > max_client_name_bytes)
    return make_error_info(
        ec::invalid_request,
        std::string{client_name_key} + ": the name has " +
            std::to_string(decoded.size()) + " bytes; at most " +
            std::to_string(max_client_name_bytes) + " bytes of UTF-8 allowed");
  if (auto problem = name_problem(decoded); !problem.empty())
    return make_error_info(ec::invalid_request,
                           std::string{client_name_key} + ": the name " +
                               problem +
                               "; a name is UTF-8 text without control "
                               "characters");
  name = std::move(decoded);
  return {};
}

error_info read_client_name(const grpc::ServerContextBase& ctx,
                            std::string& name) {
  name.clear();
  auto& metadata = ctx.client_metadata();
  auto i = metadata.find(client_name_key);
  if (i == metadata.end())
    return {};
  return decode_client_name({i->second.data(), i->second.size()}, name);
}

} // namespace tb
