// Reads a `broker_config` from TOML (spec 9).
//
// The loader starts from the built-in defaults of `config/broker_config.hpp`
// and overwrites what the file sets. Every unknown key and every bad value is
// an error whose text names the dotted key, the file, the line and what was
// expected; all errors of a file are reported together, in file order. The
// TOML layout is described at the top of config_loader.cpp and in
// docs/configuration.md. Nothing here throws (short of running out of
// memory); only config_loader.cpp includes <toml.hpp>.

#pragma once

#include "config/broker_config.hpp"
#include "config/group_checks.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tb {

/// Why a config could not be loaded.
struct config_error {
  /// One message per problem, in file order. A bad key or value reads
  /// `[error] FILE:LINE:COLUMN: KEY: got X; expected Y` followed by toml11's
  /// quote of the line with a caret; a syntax error starts
  /// `FILE:LINE: TOML syntax error`; an unreadable file says so.
  std::string text;
};

/// Either a loaded `broker_config` or the `config_error` that prevented it.
///
/// A small `expected`-like wrapper around `std::variant`: test it with
/// `ok()` (or `if (result)`), then read `value()` or `error()`.
class load_result {
public:
  /// Wraps a successfully loaded config.
  load_result(broker_config cfg) : data_(std::move(cfg)) {}

  /// Wraps the error that prevented loading.
  load_result(config_error err) : data_(std::move(err)) {}

  /// Returns true if this holds a config.
  bool ok() const noexcept {
    return data_.index() == 0;
  }

  /// Returns true if this holds a config.
  explicit operator bool() const noexcept {
    return ok();
  }

  /// Returns the config; requires `ok()` (throws std::bad_variant_access).
  const broker_config& value() const& {
    return std::get<broker_config>(data_);
  }

  /// Moves the config out of a temporary result; requires `ok()`.
  broker_config value() && {
    return std::get<broker_config>(std::move(data_));
  }

  /// Returns the error; requires `!ok()` (throws std::bad_variant_access).
  const config_error& error() const& {
    return std::get<config_error>(data_);
  }

private:
  std::variant<broker_config, config_error> data_;
};

/// Loads the TOML file at `path`; `source` of the result is `path`.
/// Declared groups are checked as CreateGroup checks them
/// (`check_group_settings`), with `policies` naming the registered group
/// policies (by default any policy name passes). A file that cannot be read
/// gives `cannot open config file PATH: REASON`.
load_result load_config_file(const std::string& path,
                             const policy_names& policies = {});

/// Loads TOML from `toml_text` like `load_config_file`; `name` stands for
/// the file in messages and becomes `source` of the result.
load_result load_config_string(std::string_view toml_text,
                               const std::string& name,
                               const policy_names& policies = {});

// -- value syntax: inline, so command-line flags can use it too -------------

namespace detail {

/// A unit suffix of a number in a config value and the factor it stands for.
struct unit {
  /// The suffix, e.g. `"MiB"`.
  std::string_view name;
  /// What one of the unit is in the base unit (milliseconds or bytes).
  uint64_t factor;
};

/// The longest duration a config value may give: 8760h (one year), in ms.
inline constexpr uint64_t max_duration_ms = 8760ull * 3'600'000;

/// The duration units, largest first; digits without a unit are ms.
inline constexpr unit time_units[] = {
    {"h", 3'600'000}, {"m", 60'000}, {"s", 1000}, {"ms", 1}};

/// The byte size units, largest first; digits without a unit are bytes.
inline constexpr unit size_units[] = {
    {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1024}, {"", 1}};

/// Parses digits and an optional suffix from `units` (none = factor 1) into a
/// number of at most `max`; returns nothing for any other text.
template <std::size_t N>
std::optional<uint64_t> parse_scaled(std::string_view text,
                                     const unit (&units)[N], uint64_t max) {
  uint64_t n = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    auto digit = static_cast<uint64_t>(text[i] - '0');
    if (n > (max - digit) / 10)
      return std::nullopt;
    n = n * 10 + digit;
  }
  auto suffix = text.substr(i);
  uint64_t factor = suffix.empty() ? 1 : 0;
  for (const auto& u : units)
    if (!suffix.empty() && u.name == suffix)
      factor = u.factor;
  if (i == 0 || factor == 0 || n > max / factor)
    return std::nullopt;
  return n * factor;
}

} // namespace detail

/// Parses a duration: digits with unit `ms`, `s`, `m` or `h`, or bare digits
/// meaning milliseconds; returns nothing for other text or beyond 8760h.
inline std::optional<std::chrono::milliseconds>
parse_duration(std::string_view text) {
  auto n =
      detail::parse_scaled(text, detail::time_units, detail::max_duration_ms);
  if (!n)
    return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(*n));
}

/// Parses a duration given on a command line: as `parse_duration`, but a
/// number without a unit is refused (`5` could mean seconds or
/// milliseconds), except `0`; returns nothing for other text.
inline std::optional<std::chrono::milliseconds>
parse_flag_duration(std::string_view text) {
  bool bare = !text.empty() &&
              text.find_first_not_of("0123456789") == std::string_view::npos;
  if (bare && text.find_first_not_of('0') != std::string_view::npos)
    return std::nullopt;
  return parse_duration(text);
}

/// Returns the sentence that refuses `text` as the duration of command-line
/// flag `flag` ("--timeout"), telling to add a unit to a bare number.
inline std::string bad_flag_duration(std::string_view flag,
                                     std::string_view text) {
  std::string got{text};
  bool bare = !text.empty() &&
              text.find_first_not_of("0123456789") == std::string_view::npos;
  if (bare)
    return std::string{flag} + ": \"" + got +
           "\" has no unit; add one: " + got + "ms, " + got + "s, " + got +
           "m or " + got + "h";
  return std::string{flag} + ": got \"" + got +
         "\"; expected a duration like 500ms, 30s, 2m or 1h";
}

/// Parses a byte size: digits with an optional `KiB`, `MiB` or `GiB` suffix;
/// returns nothing for other text or beyond 2^63 - 1 bytes.
inline std::optional<uint64_t> parse_size(std::string_view text) {
  return detail::parse_scaled(text, detail::size_units, (1ull << 63) - 1);
}

/// Returns an empty string if `address` is a valid listen address
/// (`HOST:PORT`, port 0 to 65535, IPv6 hosts in brackets, no blanks), else
/// what was expected.
inline std::string check_listen_address(std::string_view address) {
  auto colon = address.rfind(':');
  auto host = address.substr(0, colon == address.npos ? 0 : colon);
  auto port = address.substr(colon == address.npos ? 0 : colon + 1);
  bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  auto blank = [](char c) {
    return static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
  };
  constexpr detail::unit no_unit[] = {{"", 1}};
  if (colon == address.npos || !detail::parse_scaled(port, no_unit, 65535) ||
      host.empty() || std::any_of(host.begin(), host.end(), blank) ||
      (!bracketed && host.find_first_of("[]:") != host.npos))
    return "HOST:PORT with a port from 0 to 65535 and IPv6 hosts in "
           "brackets, like \"127.0.0.1:7400\" or \"[::1]:7400\"";
  return {};
}

/// What a metrics listen address may be, for messages.
inline constexpr std::string_view metrics_listen_expected =
    "\"off\" or HOST:PORT with a port from 0 to 65535 and IPv6 hosts in "
    "brackets, like \"127.0.0.1:7401\" or \"[::1]:7401\"";

/// Reads a metrics listen address (the `[metrics] listen` key and the
/// `--metrics-listen` flag): a listen address as `check_listen_address`
/// takes it, or `"off"` or an empty string for no metrics listener. Sets
/// `out` (empty for none) and returns true, or returns false and leaves
/// `out` alone.
inline bool parse_metrics_listen(std::string_view text, std::string& out) {
  if (text.empty() || text == "off") {
    out.clear();
    return true;
  }
  if (!check_listen_address(text).empty())
    return false;
  out = std::string(text);
  return true;
}

/// Returns a short multi-line summary of `cfg` for the startup log.
std::string describe(const broker_config& cfg);

} // namespace tb
