#include "log/log.hpp"
#include "log/utf8.hpp"

#include <cstdio>
#include <ctime>

namespace tb::log {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

// Returns the short escape of a control character (`n` for a newline), or 0.
char short_escape(unsigned char c) {
  switch (c) {
  case '\n':
    return 'n';
  case '\r':
    return 'r';
  case '\t':
    return 't';
  case '\b':
    return 'b';
  case '\f':
    return 'f';
  default:
    return 0;
  }
}

// Returns the name of `lvl` as text lines show it, padded to five.
std::string_view text_level(level lvl) {
  switch (lvl) {
  case level::trace:
    return "TRACE";
  case level::debug:
    return "DEBUG";
  case level::info:
    return "INFO ";
  case level::warn:
    return "WARN ";
  case level::error:
    return "ERROR";
  case level::off:
    break;
  }
  return "     ";
}

void append_number(std::string& out, const field& f) {
  switch (f.what()) {
  case field::kind::unsigned_number:
    out += std::to_string(f.unsigned_value());
    break;
  case field::kind::signed_number:
    out += std::to_string(f.signed_value());
    break;
  case field::kind::flag:
    out += f.unsigned_value() != 0 ? "true" : "false";
    break;
  case field::kind::text:
    break;
  }
}

} // namespace

std::string format_timestamp(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  auto secs = system_clock::to_time_t(t);
  auto millis =
      duration_cast<milliseconds>(t.time_since_epoch()).count() % 1000;
  if (millis < 0)
    millis += 1000;
  std::tm parts{};
  gmtime_r(&secs, &parts);
  char stamp[40];
  auto n = std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &parts);
  std::snprintf(stamp + n, sizeof(stamp) - n, ".%03dZ",
                static_cast<int>(millis));
  return stamp;
}

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    auto len = utf8_sequence_length(text.substr(i));
    if (len == 0) {
      out += "\\ufffd"; // not UTF-8: a JSON parser would reject the line
      ++i;
      continue;
    }
    if (len > 1) {
      out.append(text.data() + i, len);
      i += len;
      continue;
    }
    ++i;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (auto e = short_escape(c)) {
      out += '\\';
      out += e;
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out += hex_digits[c >> 4];
      out += hex_digits[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void append_text_escaped(std::string& out, std::string_view text, bool quote) {
  if (quote)
    out += '"';
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    auto len = utf8_sequence_length(text.substr(i));
    if (len > 1) {
      out.append(text.data() + i, len);
      i += len;
      continue;
    }
    ++i;
    if (quote && (c == '"' || c == '\\')) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (auto e = short_escape(c); e != 0 && len == 1) {
      out += '\\';
      out += e;
    } else if (len == 0 || c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex_digits[c >> 4];
      out += hex_digits[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (quote)
    out += '"';
}

bool needs_quotes(std::string_view value) {
  if (value.empty())
    return true;
  for (std::size_t i = 0; i < value.size();) {
    auto c = static_cast<unsigned char>(value[i]);
    auto len = utf8_sequence_length(value.substr(i));
    if (len == 0 || c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f)
      return true;
    i += len;
  }
  return false;
}

std::string format_line(format fmt, std::string_view timestamp, level lvl,
                        std::string_view msg, const field* first,
                        std::size_t count) {
  std::string out;
  out.reserve(64 + msg.size() + 24 * count);
  const field* last = first + count;
  if (fmt == format::json) {
    out += "{\"ts\":";
    append_json_string(out, timestamp);
    out += ",\"level\":";
    append_json_string(out, to_string(lvl));
    out += ",\"msg\":";
    append_json_string(out, msg);
    for (auto* f = first; f != last; ++f) {
      out += ',';
      append_json_string(out, f->name());
      out += ':';
      if (f->what() == field::kind::text)
        append_json_string(out, f->text());
      else
        append_number(out, *f);
    }
    out += '}';
    return out;
  }
  if (!timestamp.empty()) {
    out += timestamp;
    out += ' ';
  }
  out += text_level(lvl);
  out += ' ';
  append_text_escaped(out, msg, false);
  for (auto* f = first; f != last; ++f) {
    out += ' ';
    append_text_escaped(out, f->name(), false);
    out += '=';
    if (f->what() == field::kind::text)
      append_text_escaped(out, f->text(), needs_quotes(f->text()));
    else
      append_number(out, *f);
  }
  return out;
}

} // namespace tb::log
