// The C++ client's check of what it is about to send: every protobuf
// `string` field (topics, patterns, group names, tags, keys, header names
// and values) must be UTF-8, or the broker cannot parse the frame and ends
// the stream (issue 15); payloads and msg_ids are `bytes`, never checked. The
// client refuses such a request before sending anything, with INVALID_ARGUMENT
// naming the field and the byte offset:
//
//   publish.messages[0].topic "x.\xff" is not UTF-8 (at byte offset 2: 0xff)
//
// `connection::publish` and `async_client` answer with that status; the
// `session` calls throw `invalid_request` (see docs/client.md).

#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "tinybroker.pb.h"

namespace tb::client {

struct outgoing_message;

/// Thrown by a `session` call whose request holds a string that is not
/// UTF-8; nothing was sent, and the stream goes on.
class invalid_request : public std::invalid_argument {
public:
  /// Wraps `status` (INVALID_ARGUMENT); `what()` is its message.
  explicit invalid_request(grpc::Status status);

  /// Returns the status saying which field is wrong.
  const grpc::Status& status() const noexcept {
    return status_;
  }

private:
  grpc::Status status_;
};

/// Returns OK if `value` is UTF-8, else INVALID_ARGUMENT saying that
/// `field` is not, at which byte offset and with which byte.
grpc::Status check_utf8(std::string_view field, std::string_view value);

/// Checks the topic, key and headers of `msg`; `field` names it in errors
/// (e.g. "publish.messages[3]").
grpc::Status check_strings(const outgoing_message& msg,
                           std::string_view field = "message");

/// Checks the topic, key and headers of `msg`; `field` names it in errors.
grpc::Status check_strings(const tinybroker::v1::Message& msg,
                           std::string_view field = "message");

/// Checks the strings of a client frame: a subscribe's pattern, group and
/// tags, a publish's messages.
grpc::Status check_strings(const tinybroker::v1::ClientFrame& frame);

/// Checks the messages of a unary Publish request.
grpc::Status check_strings(const tinybroker::v1::PublishRequest& request);

/// Checks a CreateGroup request: the name, pattern, dead letter topic and
/// policy.
grpc::Status check_strings(const tinybroker::v1::CreateGroupRequest& request);

/// The metadata key that carries the client's chosen name on every call.
inline constexpr const char* client_name_key = "tinybroker-client-name";

/// The longest client name, in bytes of UTF-8.
inline constexpr std::size_t max_client_name_bytes = 128;

/// Returns OK if `name` may name a client (at most 128 bytes of UTF-8
/// without control characters; empty sends no name), else
/// INVALID_ARGUMENT saying what is wrong with it.
grpc::Status check_client_name(std::string_view name);

/// Returns `name` as it travels in `tinybroker-client-name`: printable
/// ASCII other than `%` as it is, every other byte as `%XX` (gRPC metadata
/// values are ASCII; the broker decodes them back).
std::string encode_client_name(std::string_view name);

} // namespace tb::client
