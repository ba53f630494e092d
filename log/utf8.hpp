// UTF-8 validation: the project's one validator, header-only so that every
// part can use it without linking anything. Log lines escape what is not
// UTF-8, the config loader refuses a file that is not, the CLI's JSON
// output base64-encodes payloads that are not, and the C++ client refuses
// names that are not before it sends them (protobuf `string` fields must be
// UTF-8: the broker cannot parse a frame that breaks this).
//
// Well-formed means RFC 3629: no overlong forms, no surrogates (U+D800 to
// U+DFFF), nothing above U+10FFFF.

#pragma once

#include <cstddef>
#include <string_view>

namespace tb {

/// Returns the length (1 to 4) of the well-formed UTF-8 sequence at the
/// start of `s`, or 0 if `s` is empty or does not start with one.
inline std::size_t utf8_sequence_length(std::string_view s) noexcept {
  auto byte = [&](std::size_t i) -> unsigned {
    return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u;
  };
  auto cont = [&](std::size_t i, unsigned lo = 0x80, unsigned hi = 0xBF) {
    auto b = byte(i);
    return b >= lo && b <= hi;
  };
  if (s.empty())
    return 0;
  auto b0 = byte(0);
  if (b0 < 0x80)
    return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    auto lo = b0 == 0xE0 ? 0xA0u : 0x80u; // no overlong forms
    auto hi = b0 == 0xED ? 0x9Fu : 0xBFu; // no surrogates
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    auto lo = b0 == 0xF0 ? 0x90u : 0x80u;
    auto hi = b0 == 0xF4 ? 0x8Fu : 0xBFu; // at most U+10FFFF
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/// Returns the offset of the first byte of `s` that is not part of
/// well-formed UTF-8, or `s.size()` if there is none.
inline std::size_t first_invalid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i; // ASCII, the common case, without the general path
      continue;
    }
    auto len = utf8_sequence_length(s.substr(i));
    if (len == 0)
      return i;
    i += len;
  }
  return s.size();
}

/// Returns true if `s` is well-formed UTF-8.
inline bool is_utf8(std::string_view s) noexcept {
  return first_invalid_utf8(s) == s.size();
}

} // namespace tb
