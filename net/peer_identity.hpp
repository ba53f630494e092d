// Who is on the other end of a call: the subject of the client certificate
// that mutual TLS verified (spec 10), for mapping certificates to tokens;
// and the name the client chose for itself, for Stats and log lines.

#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "routing/error.hpp"

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

/// The metadata key that carries a client's chosen name (as NATS's `name`
/// and RabbitMQ's `connection_name`).
inline constexpr const char* client_name_key = "tinybroker-client-name";

/// The longest client name, in bytes of UTF-8 (after decoding).
inline constexpr std::size_t max_client_name_bytes = 128;

/// Decodes the value of `tinybroker-client-name` into `name`: `%XX` (two
/// hex digits) stands for byte XX, as in gRPC's `grpc-message`, so that any
/// UTF-8 name travels as printable ASCII; other bytes stand for
/// themselves. Returns INVALID_ARGUMENT naming the problem if the decoded
/// name is longer than `max_client_name_bytes`, is not UTF-8 or holds a
/// control character (U+0000-U+001F, U+007F-U+009F); `name` is then empty.
error_info decode_client_name(std::string_view value, std::string& name);

/// Reads the client's name from the metadata of `ctx` into `name` (empty
/// when the client sent none); returns the error of `decode_client_name`
/// (naming the metadata key) if it is not a usable name.
error_info read_client_name(const grpc::ServerContextBase& ctx,
                            std::string& name);

} // namespace tb
