// The TOML walker of the config loader: reads values into config fields and
// collects every problem with its place in the file. Internal to tb_config
// (it includes <toml.hpp>, which is slow to compile).

#pragma once

#include <toml.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_loader.hpp"
#include "routing/topic.hpp"

namespace tb::detail {

// -- numbers with units -------------------------------------------------------

inline constexpr int64_t max_int = std::numeric_limits<int64_t>::max();

// Returns true if `text` is 1..128 bytes of [A-Za-z0-9_-] (spec 6): the
// rule of group names, which policy names follow too.
inline bool is_name(std::string_view text) {
  return !validate_group_name(text);
}

// -- the TOML walker ----------------------------------------------------------

// Reads TOML values into config fields and collects every problem found.
class reader {
public:
  using field_fn = std::function<void(const toml::value&, const std::string&)>;
  using parse_fn = std::function<std::optional<uint64_t>(std::string_view)>;
  using check_fn = bool (*)(std::string_view);

  // A key a table may hold and how to read its value.
  struct field {
    std::string_view key;
    field_fn read;
  };

  // The problems found, in file order.
  std::multimap<std::pair<uint32_t, uint32_t>, std::string> problems;

  // A group table as read, for the checks that need the whole file first
  // (the limits, the defaults).
  struct group_table {
    std::string name;
    std::string path;
    toml::value table;
  };

  // The declared groups, checked once the whole document is read.
  std::vector<group_table> declared;

  // The [groups.defaults] table, if the file has one.
  std::optional<toml::value> defaults;

  // The directory relative file names in the config start from: the
  // config file's own (empty for a config read from a string: the current
  // directory).
  std::string base_dir;

  // Records that `v` at `path` is not what was `expected`; the `problem`
  // defaults to what `v` is.
  void bad(const toml::value& v, const std::string& path,
           const std::string& expected, std::string problem = {}) {
    auto str = v.is_string() ? v.as_string().str : std::string{};
    if (str.size() > 60)
      str = str.substr(0, 57) + "...";
    if (problem.empty())
      problem = v.is_string() ? "got \"" + str + "\""
                : v.is_integer() && v.as_integer() != max_int
                    ? "got " + std::to_string(v.as_integer())
                    : (v.is_array() ? "got an " : "got a ") +
                          toml::stringize(v.type());
    auto loc = v.location();
    auto head = loc.file_name() + ":" + std::to_string(loc.line()) + ":" +
                std::to_string(loc.column()) + ": " + path + ": " + problem +
                (expected.empty() ? "" : "; expected " + expected);
    problems.emplace(std::pair{loc.line(), loc.column()},
                     toml::format_error(head, v, problem));
  }

  // Returns `file` relative to `base_dir` if it is a relative path.
  std::string resolve(const std::string& file) const {
    std::filesystem::path p{file};
    if (p.is_relative() && !base_dir.empty())
      p = std::filesystem::path{base_dir} / p;
    return p.string();
  }

  // Returns a reader for a non-empty file path, relative to `base_dir`.
  field_fn file_path(std::string& out) {
    return [this, &out](const toml::value& v, const std::string& path) {
      if (!v.is_string() || v.as_string().str.empty())
        return bad(v, path, "a non-empty file path");
      out = resolve(v.as_string().str);
    };
  }

  // Records a problem with the secret `v` at `path` without quoting its
  // line, which holds the secret.
  void bad_secret(const toml::value& v, const std::string& path,
                  const std::string& problem) {
    auto loc = v.location();
    auto head = loc.file_name() + ":" + std::to_string(loc.line()) + ":" +
                std::to_string(loc.column()) + ": " + path + ": " + problem;
    problems.emplace(std::pair{loc.line(), loc.column()},
                     "[error] " + head +
                         " (the line is not shown: it holds a "
                         "secret)");
  }

  // Reads table `tbl` at `path`: each key goes to its field, or to `other`;
  // without `other`, a key that is not a field is an error.
  void read_table(const toml::value& tbl, const std::string& path,
                  const std::vector<field>& fields, const field_fn& other) {
    if (!tbl.is_table())
      return bad(tbl, path, "a table");
    for (const auto& [key, v] : tbl.as_table()) {
      auto sub = path.empty() ? key : path + "." + key;
      auto i = std::find_if(fields.begin(), fields.end(),
                            [&k = key](const field& f) { return f.key == k; });
      if (i != fields.end()) {
        i->read(v, sub);
      } else if (other) {
        other(v, sub);
      } else {
        std::string keys;
        for (const auto& f : fields)
          keys += (keys.empty() ? "" : ", ") + std::string(f.key);
        bad(v, sub, "one of " + keys, "unknown key");
      }
    }
  }

  // Returns a reader for the table of `fields`.
  field_fn table(std::vector<field> fields) {
    return [this, fields](const toml::value& v, const std::string& path) {
      read_table(v, path, fields, nullptr);
    };
  }

  // Returns a reader for a boolean.
  field_fn boolean(bool& out) {
    return [this, &out](const toml::value& v, const std::string& path) {
      if (!v.is_boolean())
        return bad(v, path, "true or false");
      out = v.as_boolean();
    };
  }

  // Returns a reader for a string that `check` accepts; `expected` says
  // which strings that are.
  field_fn text(std::string& out, std::string expected, check_fn check) {
    return [this, &out, expected, check](const toml::value& v,
                                         const std::string& path) {
      if (!v.is_string() || !check(v.as_string().str))
        return bad(v, path, expected);
      out = v.as_string().str;
    };
  }

  // Returns a reader for an integer in [min, max], or a string that `parse`
  // turns into one (when `parse` is given); `expected` describes the value.
  template <class T>
  field_fn number(T& out, uint64_t min, uint64_t max, std::string expected,
                  parse_fn parse = nullptr) {
    return [this, &out, min, max, expected, parse](const toml::value& v,
                                                   const std::string& path) {
      std::optional<uint64_t> n;
      // toml11 saturates integers that overflow int64: reject the extremes.
      if (v.is_integer() && v.as_integer() >= 0 && v.as_integer() != max_int)
        n = static_cast<uint64_t>(v.as_integer());
      else if (v.is_string() && parse)
        n = parse(v.as_string().str);
      if (!n || *n < min || *n > max)
        return bad(v, path, expected);
      out = static_cast<T>(*n);
    };
  }

  // Returns a reader for a count in [min, max].
  template <class T>
  field_fn count(T& out, uint64_t min,
                 uint64_t max = std::numeric_limits<T>::max()) {
    return number(out, min, max,
                  "an integer from " + std::to_string(min) + " to " +
                      std::to_string(max));
  }

  // Returns a reader for a size in bytes, at least 1.
  template <class T>
  field_fn size(T& out) {
    return number(out, 1, std::numeric_limits<T>::max(),
                  "a size > 0: an integer of bytes or a string like "
                  "\"64KiB\", \"1MiB\" or \"1GiB\"",
                  parse_size);
  }

  // Returns a reader for a duration of at least `min_ms` milliseconds.
  field_fn duration(std::chrono::milliseconds& out, uint64_t min_ms) {
    return number(out, min_ms, max_duration_ms,
                  std::string{"a duration"} + (min_ms > 0 ? " > 0" : "") +
                      " of at most 8760h: a string like \"250ms\", \"30s\", "
                      "\"2m\" or \"1h\", or an integer of milliseconds",
                  [](std::string_view t) {
                    return detail::parse_scaled(t, time_units, max_duration_ms);
                  });
  }

  // Returns a reader for a duration that may be "off" (zero).
  field_fn duration_or_off(std::chrono::milliseconds& out) {
    return number(out, 0, max_duration_ms,
                  "a duration of at most 8760h like \"60s\" or \"5m\", or "
                  "\"off\" (also \"0s\")",
                  [](std::string_view t) -> std::optional<uint64_t> {
                    if (t == "off")
                      return 0;
                    return detail::parse_scaled(t, time_units, max_duration_ms);
                  });
  }

  // Returns a reader for an overflow policy.
  field_fn overflow(overflow_policy& out) {
    return [this, &out](const toml::value& v, const std::string& path) {
      if (!v.is_string() || !from_string(v.as_string().str, out))
        bad(v, path, "\"reject\" or \"drop_oldest\"");
    };
  }

  // Returns a reader for what a group does with expired messages.
  field_fn on_expiry(expiry_action& out) {
    return [this, &out](const toml::value& v, const std::string& path) {
      if (!v.is_string() || !from_string(v.as_string().str, out))
        bad(v, path, "\"dead_letter\" or \"drop\"");
    };
  }

  // Returns a reader for the settings of a group; a `declared` group needs a
  // pattern, the defaults may not have one.
  field_fn group(group_settings& out, bool declared) {
    return [this, &out, declared](const toml::value& v,
                                  const std::string& path) {
      std::vector<field> fields{
          {"ack_wait", duration(out.ack_wait, 1)},
          {"max_deliveries", count(out.max_deliveries, 0)},
          {"max_pending_messages", count(out.max_pending_messages, 1)},
          {"max_pending_bytes", size(out.max_pending_bytes)},
          {"overflow", overflow(out.overflow)},
          {"dead_letter", text(out.dead_letter, "a string",
                               [](std::string_view) { return true; })},
          {"policy",
           text(out.policy, "a policy name like \"round_robin\"", is_name)},
          {"max_age", duration_or_off(out.max_age)},
          {"on_expiry", on_expiry(out.on_expiry)},
          {"max_priority", count(out.max_priority, 1, 9)},
          {"dedup_window", duration(out.dedup_window, 0)},
          {"replicas", count(out.replicas, 0)}};
      if (declared)
        fields.push_back(
            {"pattern", text(out.pattern, "a non-empty pattern",
                             [](std::string_view t) { return !t.empty(); })});
      read_table(v, path, fields, nullptr);
      if (declared && v.is_table() && v.as_table().count("pattern") == 0)
        bad(v, path, "a key like pattern = \"orders.>\"",
            "a declared group needs a pattern");
    };
  }
};

/// Reads the `[auth]` table `v` at `path` into `out` (config/auth_loader.cpp):
/// each token's secret is read from where it is kept and stored as its
/// SHA-256 only.
void read_auth(reader& r, const toml::value& v, const std::string& path,
               auth_config& out);

/// Reads the `[cluster]` table `v` at `path` into `out`
/// (config/cluster_loader.cpp).
void read_cluster(reader& r, const toml::value& v, const std::string& path,
                  cluster_config& out);

/// Checks what `[cluster]` needs of the rest of the file once it is read:
/// `tls = true` needs `[tls]` with cert, key and client_ca.
void check_cluster(reader& r, const toml::value& root,
                   const broker_config& cfg);

} // namespace tb::detail
