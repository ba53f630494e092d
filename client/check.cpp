#include "client/check.hpp"

#include <cstdio>
#include <string>

#include "client/connection.hpp"
#include "log/utf8.hpp"

namespace tb::client {

namespace pb = tinybroker::v1;

namespace {

// The most bytes of a bad value an error message quotes.
constexpr std::size_t max_quoted = 64;

// Returns `value` in double quotes for an error message: printable ASCII
// and UTF-8 as they are, `"` and `\` escaped, any other byte as `\xHH`;
// cut after `max_quoted` bytes.
std::string quoted(std::string_view value) {
  std::string out = "\"";
  std::size_t i = 0;
  while (i < value.size() && i < max_quoted) {
    auto c = static_cast<unsigned char>(value[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (auto len = c >= 0x80 ? utf8_sequence_length(value.substr(i)) : 0;
               len > 0) {
      out.append(value.substr(i, len));
      i += len;
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    }
  }
  out += i < value.size() ? "\"..." : "\"";
  return out;
}

// Returns `prefix` + "[" + `index` + "]".
std::string indexed(std::string_view prefix, int index) {
  return std::string{prefix} + "[" + std::to_string(index) + "]";
}

// Returns the INVALID_ARGUMENT status for `value` of `field`, whose byte at
// `bad` is not part of UTF-8.
grpc::Status not_utf8(std::string_view field, std::string_view value,
                      std::size_t bad) {
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02x",
                static_cast<unsigned>(static_cast<unsigned char>(value[bad])));
  return grpc::Status{grpc::StatusCode::INVALID_ARGUMENT,
                      std::string{field} + " " + quoted(value) +
                          " is not UTF-8 (at byte offset " +
                          std::to_string(bad) + ": " + byte + ")"};
}

// Checks `value`; `field()` names it, called only when it is not UTF-8, so
// that checking costs no allocation on the publish path.
template <class Field>
grpc::Status check(std::string_view value, Field field) {
  auto bad = first_invalid_utf8(value);
  if (bad == value.size())
    return grpc::Status::OK;
  return not_utf8(field(), value, bad);
}

// Checks a message's fields (wire form or not): `topic`, `key` and the
// headers that `each_header(callback)` passes to the callback; `field()`
// names the message.
template <class Field, class EachHeader>
grpc::Status check_message(Field field, std::string_view topic,
                           std::string_view key, EachHeader each_header) {
  auto name = [&field](std::string_view member) {
    return std::string{field()}.append(member);
  };
  if (auto status = check(topic, [&] { return name(".topic"); }); !status.ok())
    return status;
  if (auto status = check(key, [&] { return name(".key"); }); !status.ok())
    return status;
  grpc::Status result;
  each_header([&](std::string_view header, std::string_view value) {
    if (!result.ok())
      return;
    result = check(header, [&] { return name(".headers key"); });
    if (result.ok())
      result = check(value,
                     [&] { return name(".headers[" + quoted(header) + "]"); });
  });
  return result;
}

// Checks wire message `msg`, which `field()` names; its msg_id is bytes
// (issue 28), not checked.
template <class Field>
grpc::Status check_wire_message(const pb::Message& msg, Field field) {
  return check_message(field, msg.topic(), msg.key(), [&](auto&& visit) {
    for (auto& [name, value] : msg.headers())
      visit(name, value);
  });
}

} // namespace

invalid_request::invalid_request(grpc::Status status)
    : std::invalid_argument(status.error_message()),
      status_(std::move(status)) {}

grpc::Status check_utf8(std::string_view field, std::string_view value) {
  return check(value, [field] { return field; });
}

grpc::Status check_strings(const outgoing_message& msg,
                           std::string_view field) {
  auto name = [field] {
    return field;
  };
  // The msg_id is bytes (issue 28): not checked.
  return check_message(name, msg.topic, msg.key, [&](auto&& visit) {
    for (auto& [header, value] : msg.headers)
      visit(header, value);
  });
}

grpc::Status check_strings(const pb::Message& msg, std::string_view field) {
  return check_wire_message(msg, [field] { return field; });
}

namespace {

// Checks the strings of one Subscribe; `prefix` names it ("subscribe" or
// "subscribe_batch.subscriptions[i]").
grpc::Status check_subscribe(const pb::Subscribe& sub,
                             const std::string& prefix) {
  if (auto status = check_utf8(prefix + ".pattern", sub.pattern());
      !status.ok())
    return status;
  if (auto status = check_utf8(prefix + ".group", sub.group()); !status.ok())
    return status;
  for (int i = 0; i < sub.tags_size(); ++i)
    if (auto status =
            check(sub.tags(i), [&] { return indexed(prefix + ".tags", i); });
        !status.ok())
      return status;
  return grpc::Status::OK;
}

} // namespace

grpc::Status check_strings(const pb::ClientFrame& frame) {
  if (frame.has_subscribe())
    return check_subscribe(frame.subscribe(), "subscribe");
  if (frame.has_subscribe_batch()) {
    auto& subs = frame.subscribe_batch().subscriptions();
    for (int i = 0; i < subs.size(); ++i)
      if (auto status = check_subscribe(
              subs[i], indexed("subscribe_batch.subscriptions", i));
          !status.ok())
        return status;
  } else if (frame.has_publish()) {
    auto& messages = frame.publish().messages();
    for (int i = 0; i < messages.size(); ++i)
      if (auto status = check_wire_message(
              messages[i], [i] { return indexed("publish.messages", i); });
          !status.ok())
        return status;
  }
  return grpc::Status::OK;
}

grpc::Status check_strings(const pb::PublishRequest& request) {
  for (int i = 0; i < request.messages_size(); ++i)
    if (auto status = check_wire_message(
            request.messages(i), [i] { return indexed("messages", i); });
        !status.ok())
      return status;
  return grpc::Status::OK;
}

grpc::Status check_strings(const pb::CreateGroupRequest& request) {
  auto& settings = request.settings();
  for (auto [field, value] :
       {std::pair<std::string_view, std::string_view>{"name", request.name()},
        {"settings.pattern", settings.pattern()},
        {"settings.dead_letter", settings.dead_letter()},
        {"settings.policy", settings.policy()}})
    if (auto status = check_utf8(field, value); !status.ok())
      return status;
  return grpc::Status::OK;
}

grpc::Status check_client_name(std::string_view name) {
  if (name.size() > max_client_name_bytes)
    return grpc::Status{grpc::StatusCode::INVALID_ARGUMENT,
                        "client name " + quoted(name) + " has " +
                            std::to_string(name.size()) + " bytes; at most " +
                            std::to_string(max_client_name_bytes) +
                            " bytes of UTF-8 allowed"};
  if (auto status = check_utf8("client name", name); !status.ok())
    return status;
  for (std::size_t i = 0; i < name.size();) {
    auto c = static_cast<unsigned char>(name[i]);
    auto control_c1 = c == 0xc2 && i + 1 < name.size() &&
                      static_cast<unsigned char>(name[i + 1]) <= 0x9f;
    if (c < 0x20 || c == 0x7f || control_c1)
      return grpc::Status{grpc::StatusCode::INVALID_ARGUMENT,
                          "client name " + quoted(name) +
                              " holds a control character (at byte offset " +
                              std::to_string(i) + ")"};
    i += c < 0x80 ? 1 : utf8_sequence_length(name.substr(i));
  }
  return grpc::Status::OK;
}

std::string encode_client_name(std::string_view name) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(name.size());
  for (auto ch : name) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '%') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 0xf];
    }
  }
  return out;
}

} // namespace tb::client
