// Who is on the other end of a call: the subject of the client certificate
// that mutual TLS verified (spec 10), for mapping certificates to tokens.

#pragma once

#include <string>

namespace grpc {
class ServerContextBase;
} // namespace grpc

namespace tb {

/// Returns the subject of the client's verified certificate (e.g.
/// "CN=orders,O=Example"), or "" without one.
///
/// The text is gRPC's `x509_subject` auth property: OpenSSL's RFC 2253
/// rendering (`X509_NAME_print_ex` with `XN_FLAG_RFC2253`), which lists the
/// subject's attributes from last to first, separated by `,` without
/// spaces. A certificate made with `-subj "/O=Example/CN=orders"` gives
/// "CN=orders,O=Example". Special characters are escaped with `\` (and
/// bytes beyond ASCII as `\XX`). The broker only sees a client certificate
/// under `[tls] client_ca`, where gRPC verified it against that CA before
/// the call; without mutual TLS (or without TLS) this returns "".
std::string peer_certificate_subject(const grpc::ServerContextBase& ctx);

} // namespace tb
