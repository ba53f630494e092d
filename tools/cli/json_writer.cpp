#include "tools/cli/json_writer.hpp"

#include "log/utf8.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tb::cli {

namespace {

// Appends `value` as a quoted JSON string with every needed escape.
void append_quoted(std::string& out, std::string_view value) {
  out += '"';
  for (char c : value) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x",
                      static_cast<unsigned>(static_cast<unsigned char>(c)));
        out += buf;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

} // namespace

json_writer& json_writer::open_object(std::string_view name) {
  begin_value(name);
  out_ += '{';
  first_.push_back(true);
  return *this;
}

json_writer& json_writer::close_object() {
  out_ += '}';
  first_.pop_back();
  return *this;
}

json_writer& json_writer::open_array(std::string_view name) {
  begin_value(name);
  out_ += '[';
  first_.push_back(true);
  return *this;
}

json_writer& json_writer::close_array() {
  out_ += ']';
  first_.pop_back();
  return *this;
}

json_writer& json_writer::text(std::string_view name, std::string_view value) {
  begin_value(name);
  append_quoted(out_, value);
  return *this;
}

json_writer& json_writer::number(std::string_view name, uint64_t value) {
  begin_value(name);
  out_ += std::to_string(value);
  return *this;
}

json_writer& json_writer::signed_number(std::string_view name, int64_t value) {
  begin_value(name);
  out_ += std::to_string(value);
  return *this;
}

json_writer& json_writer::real(std::string_view name, double value) {
  begin_value(name);
  if (!std::isfinite(value)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out_.append(buf, ec == std::errc{} ? end : buf);
  return *this;
}

json_writer& json_writer::boolean(std::string_view name, bool value) {
  begin_value(name);
  out_ += value ? "true" : "false";
  return *this;
}

json_writer& json_writer::bytes(std::string_view name, std::string_view value) {
  if (is_utf8(value))
    return text(name, value);
  return text(std::string{name} + "_base64", base64(value));
}

void json_writer::begin_value(std::string_view name) {
  if (!first_.empty()) {
    if (!first_.back())
      out_ += ',';
    first_.back() = false;
  }
  if (!name.empty()) {
    append_quoted(out_, name);
    out_ += ':';
  }
}

std::string base64(std::string_view bytes) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t chunk = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size())
      chunk |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size())
      chunk |= static_cast<unsigned char>(bytes[i + 2]);
    out += alphabet[(chunk >> 18) & 63];
    out += alphabet[(chunk >> 12) & 63];
    out += i + 1 < bytes.size() ? alphabet[(chunk >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? alphabet[chunk & 63] : '=';
  }
  return out;
}

} // namespace tb::cli
