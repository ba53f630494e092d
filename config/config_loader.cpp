// Reads a `broker_config` from TOML. The layout (docs/configuration.md has
// every key with its meaning; values shown are the built-in defaults):
//
//   listen = "127.0.0.1:7400"   log_level = "info"   worker_threads = 0
//   log_format = "text"         log_summary_interval = "60s" (or "off")
//   shutdown_grace = "5s"       topic_idle_timeout = "60s"
//   [limits]          every limits_config field under its own name:
//                     max_message_bytes = "1MiB", max_topic_tokens = 32, ...
//   [dedup]           window = "2m", max_ids = 1000000 (msg_id windows)
//   [observability]   health_service = true, reflection = true
//   [grpc]            transport = "callback" (or "cq": how Session streams
//                     are served)
//   [metrics]         listen = "127.0.0.1:7401" ("off" or "" for none),
//                     per_topic = false, tls = (true if [tls] is set)
//   [console]         enabled = true, allow_actions = false
//   [tls]             cert = "PATH", key = "PATH", client_ca = "PATH" (no
//                     TLS without the table; cert and key go together)
//   [groups]          auto_create = true
//   [groups.defaults] ack_wait = "30s", max_deliveries = 5, overflow =
//                     "reject", ... (group_settings without `pattern`)
//   [groups.NAME]     declares group NAME: `pattern` is required, the other
//                     keys override [groups.defaults], wherever that is
//   [auth]            enabled, [[auth.tokens]] (config/auth_loader.cpp)
//   [cluster]         name, listen, peers, heartbeat, dead_after, tls, ...
//                     (config/cluster_loader.cpp; none = a single node)
//
// Durations: digits with unit ms, s, m or h ("250ms", "30s", "2m"), or an
// integer (or digit string) of milliseconds; at most 8760h. Sizes (the
// `*_bytes` keys): an integer or digits with KiB, MiB or GiB ("64KiB").
// toml11 accepts any key, so each table is walked against the keys it may
// hold. Only this file includes <toml.hpp>: it is slow to compile.

#include "config/config_loader.hpp"

#include "routing/topic.hpp"

#include "config/toml_reader.hpp"
#include "log/utf8.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

namespace tb {

namespace {

using detail::is_name;
using detail::reader;

// Reads the document `root` into `cfg`, recording problems in `r`.
void read_document(reader& r, const toml::value& root, broker_config& cfg) {
  auto& lim = cfg.limits;
  auto limits = r.table(
      {{"max_message_bytes", r.size(lim.max_message_bytes)},
       {"max_topic_bytes",
        r.number(lim.max_topic_bytes, 1, max_topic_bytes_limit,
                 "a size from 1 to 65535 bytes, like 255 or \"1KiB\"",
                 parse_size)},
       {"max_topic_tokens", r.count(lim.max_topic_tokens, 1)},
       {"max_publish_batch", r.count(lim.max_publish_batch, 1)},
       {"max_subscribe_batch", r.count(lim.max_subscribe_batch, 1)},
       {"subscription_buffer", r.count(lim.subscription_buffer, 1)},
       {"max_subscriptions_per_session",
        r.count(lim.max_subscriptions_per_session, 1)},
       {"max_session_buffered_bytes", r.size(lim.max_session_buffered_bytes)},
       {"max_in_flight_per_session", r.count(lim.max_in_flight_per_session, 1)},
       {"max_frame_messages", r.count(lim.max_frame_messages, 1)},
       {"max_sessions", r.count(lim.max_sessions, 1)},
       {"max_groups", r.count(lim.max_groups, 1)},
       {"max_topics", r.count(lim.max_topics, 1)},
       {"max_routes_per_session", r.count(lim.max_routes_per_session, 1)},
       {"max_delay",
        r.number(lim.max_delay, 1, max_delay_limit_ms,
                 "a duration > 0 of at most 49 days: a string like \"30s\", "
                 "\"2h\" or \"1176h\", or an integer of milliseconds",
                 [](std::string_view t) {
                   return detail::parse_scaled(t, detail::time_units,
                                               max_delay_limit_ms);
                 })},
       {"max_delayed_fanout_per_topic",
        r.count(lim.max_delayed_fanout_per_topic, 1)},
       {"max_delayed_fanout", r.count(lim.max_delayed_fanout, 1)},
       {"max_pending_requests_per_session",
        r.count(lim.max_pending_requests_per_session, 1)}});
  auto dedup = r.table({{"window", r.duration(cfg.dedup.window, 1)},
                        {"max_ids", r.count(cfg.dedup.max_ids, 1)}});
  auto observability =
      r.table({{"health_service", r.boolean(cfg.health_service)},
               {"reflection", r.boolean(cfg.reflection)}});
  auto grpc_table = r.table(
      {{"transport", r.text(cfg.grpc_transport, "\"cq\" or \"callback\"",
                            [](std::string_view t) {
                              return t == "cq" || t == "callback";
                            })}});
  auto metrics_listen = [&r, &cfg](const toml::value& v,
                                   const std::string& path) {
    if (!v.is_string() ||
        !parse_metrics_listen(v.as_string().str, cfg.metrics.listen))
      r.bad(v, path, std::string(metrics_listen_expected));
  };
  auto metrics = r.table({{"listen", metrics_listen},
                          {"per_topic", r.boolean(cfg.metrics.per_topic)},
                          {"tls", r.boolean(cfg.metrics.tls)}});
  auto console =
      r.table({{"enabled", r.boolean(cfg.console.enabled)},
               {"allow_actions", r.boolean(cfg.console.allow_actions)}});
  // [tls]: paths of PEM files, relative to the config file's directory;
  // how the keys go together, and the default of [metrics] tls, are
  // checked by check_tls once the file is read.
  auto tls = r.table({{"cert", r.file_path(cfg.tls.cert)},
                      {"key", r.file_path(cfg.tls.key)},
                      {"client_ca", r.file_path(cfg.tls.client_ca)}});
  // The defaults first, wherever they are in the file: groups start from them.
  auto groups = [&](const toml::value& v, const std::string& path) {
    if (v.is_table() && v.as_table().count("defaults") != 0) {
      r.defaults = v.as_table().at("defaults");
      r.group(cfg.group_defaults, false)(*r.defaults, path + ".defaults");
    }
    auto declare = [&](const toml::value& g, const std::string& sub) {
      auto name = sub.substr(path.size() + 1);
      if (!is_name(name))
        return r.bad(g, path + ".\"" + name + "\"",
                     "1 to 128 characters of A-Z a-z 0-9 _ -",
                     "bad group name");
      auto settings = cfg.group_defaults;
      r.group(settings, true)(g, sub);
      cfg.groups[name] = std::move(settings);
      r.declared.push_back({name, sub, g});
    };
    auto skip = [](const toml::value&, const std::string&) {
    };
    r.read_table(v, path,
                 {{"auto_create", r.boolean(cfg.auto_create_groups)},
                  {"defaults", skip}},
                 declare);
  };
  auto level = [](std::string_view t) {
    auto levels = {"trace", "debug", "info", "warn", "error", "off"};
    return std::find(levels.begin(), levels.end(), t) != levels.end();
  };
  r.read_table(
      root, "",
      // check_listen_address("") returns the expectation: "" is invalid.
      {{"listen", r.text(cfg.listen, check_listen_address(""),
                         [](std::string_view t) {
                           return check_listen_address(t).empty();
                         })},
       {"log_level", r.text(cfg.log_level,
                            "\"trace\", \"debug\", \"info\", \"warn\", "
                            "\"error\" or \"off\"",
                            level)},
       {"log_format",
        r.text(cfg.log_format, "\"text\" or \"json\"",
               [](std::string_view t) { return t == "text" || t == "json"; })},
       {"log_summary_interval", r.duration_or_off(cfg.log_summary_interval)},
       {"shutdown_grace", r.duration(cfg.shutdown_grace, 0)},
       {"topic_idle_timeout", r.duration(cfg.topic_idle_timeout, 1)},
       {"worker_threads", r.count(cfg.worker_threads, 0, 1024)},
       {"scheduler",
        r.text(cfg.scheduler, "\"handoff\", \"sharing\" or \"stealing\"",
               [](std::string_view t) {
                 return t == "handoff" || t == "sharing" || t == "stealing";
               })},
       {"limits", limits},
       {"dedup", dedup},
       {"observability", observability},
       {"grpc", grpc_table},
       {"metrics", metrics},
       {"console", console},
       {"tls", tls},
       {"groups", groups},
       {"auth",
        [&r, &cfg](const toml::value& v, const std::string& path) {
          detail::read_auth(r, v, path, cfg.auth);
        }},
       {"cluster",
        [&r, &cfg](const toml::value& v, const std::string& path) {
          detail::read_cluster(r, v, path, cfg.cluster);
        }}},
      nullptr);
}

// Returns the value of `key` in `tbl` if it is a table that has one.
const toml::value* find_key(const toml::value* tbl, const std::string& key) {
  if (tbl == nullptr || !tbl->is_table() || tbl->as_table().count(key) == 0)
    return nullptr;
  return &tbl->as_table().at(key);
}

// Checks that the [tls] keys go together (cert with key; client_ca only
// with them) and sets the default of [metrics] tls: on with [tls], and
// `true` without a certificate is an error.
void check_tls(reader& r, const toml::value& root, broker_config& cfg) {
  const auto* tbl = find_key(&root, "tls");
  auto* cert = find_key(tbl, "cert");
  auto* key = find_key(tbl, "key");
  auto* client_ca = find_key(tbl, "client_ca");
  const std::string both = "both tls.cert and tls.key (the server's "
                           "certificate chain and its private key)";
  if (tbl != nullptr && tbl->is_table() && tbl->as_table().empty())
    r.bad(*tbl, "tls", both, "an empty table");
  if (cert != nullptr && key == nullptr)
    r.bad(*cert, "tls.cert", both, "set without tls.key");
  if (key != nullptr && cert == nullptr)
    r.bad(*key, "tls.key", both, "set without tls.cert");
  if (client_ca != nullptr && cert == nullptr)
    r.bad(*client_ca, "tls.client_ca",
          "tls.cert and tls.key too: client certificates are asked for "
          "only over TLS",
          "set without tls.cert");
  auto* metrics_tls = find_key(find_key(&root, "metrics"), "tls");
  if (metrics_tls == nullptr)
    cfg.metrics.tls = cfg.tls.enabled();
  else if (cfg.metrics.tls && tbl == nullptr)
    r.bad(*metrics_tls, "metrics.tls", "a [tls] table with cert and key",
          "true without [tls]");
}

// Returns the config key of a group setting.
std::string key_of(group_field field) {
  switch (field) {
  case group_field::pattern:
    return "pattern";
  case group_field::dead_letter:
  case group_field::dead_letter_loop:
    return "dead_letter";
  case group_field::policy:
    return "policy";
  case group_field::ack_wait:
    return "ack_wait";
  case group_field::replicas:
    return "replicas";
  default:
    return {};
  }
}

// Applies the broker default `[cluster] replicas` (issue 32) to the group
// defaults and every declared group that set no `replicas` of their own
// (nor in [groups.defaults]).
void apply_replicas_default(const reader& r, broker_config& cfg) {
  const toml::value* defaults = r.defaults ? &*r.defaults : nullptr;
  if (cfg.cluster.replicas == 0 || find_key(defaults, "replicas") != nullptr)
    return;
  cfg.group_defaults.replicas = cfg.cluster.replicas;
  for (auto& g : r.declared)
    if (find_key(&g.table, "replicas") == nullptr)
      cfg.groups.at(g.name).replicas = cfg.cluster.replicas;
}

// Checks the group defaults and every declared group against the rules of
// spec 6 (config/group_checks.hpp), once the limits and defaults are known,
// and reports each problem at the key that causes it: the group's own key,
// else the inherited key in [groups.defaults].
void check_groups(reader& r, const broker_config& cfg,
                  const policy_names& policies) {
  name_limits limits{cfg.limits.max_topic_bytes, cfg.limits.max_topic_tokens};
  const toml::value* defaults = r.defaults ? &*r.defaults : nullptr;
  auto report = [&r](const toml::value& at, const std::string& path,
                     const group_problem& p) {
    r.bad(at, path, "", p.error.text);
  };
  if (defaults != nullptr)
    for (auto& p :
         check_group_settings("defaults", cfg.group_defaults, limits, policies))
      if (auto* v = find_key(defaults, key_of(p.field)))
        report(*v, "groups.defaults." + key_of(p.field), p);
  for (auto& g : r.declared) {
    auto& settings = cfg.groups.at(g.name);
    for (auto& p : check_group_settings(g.name, settings, limits, policies)) {
      auto key = key_of(p.field);
      if (key.empty())
        continue; // the name was reported when the group was read
      auto inherited = find_key(defaults, key) != nullptr;
      if (auto* own = find_key(&g.table, key))
        report(*own, g.path + "." + key, p);
      else if (p.field == group_field::dead_letter_loop || !inherited)
        report(g.table, g.path, p);
      // else: a bad inherited value, reported at [groups.defaults] once
    }
  }
  if (r.declared.size() > cfg.limits.max_groups) {
    auto& first_beyond = r.declared[cfg.limits.max_groups];
    r.bad(first_beyond.table, first_beyond.path,
          "at most limits.max_groups = " +
              std::to_string(cfg.limits.max_groups) + " groups",
          std::to_string(r.declared.size()) + " groups are declared");
  }
}

// Loads `toml_text` named `name`; relative file names in it start from
// `base_dir` (empty: the current directory).
load_result load_text(std::string_view toml_text, const std::string& name,
                      const std::string& base_dir,
                      const policy_names& policies) {
  // A TOML file is UTF-8 text; toml11 3.7 also reads out of bounds on bad
  // UTF-8 in literal strings (toml11 issue #199), so check it first.
  if (auto bad = first_invalid_utf8(toml_text); bad < toml_text.size()) {
    auto head = toml_text.substr(0, bad);
    auto line = std::count(head.begin(), head.end(), '\n') + 1;
    auto column = bad - (head.rfind('\n') + 1) + 1; // npos + 1 == 0
    return config_error{name + ":" + std::to_string(line) +
                        ": TOML syntax error\nbyte " + std::to_string(column) +
                        " of line " + std::to_string(line) +
                        " is not UTF-8; a TOML file must be UTF-8 text"};
  }
  try {
    std::istringstream in{std::string(toml_text)};
    auto root = toml::parse(in, name);
    reader r;
    r.base_dir = base_dir;
    broker_config cfg;
    read_document(r, root, cfg);
    apply_replicas_default(r, cfg);
    check_groups(r, cfg, policies);
    check_tls(r, root, cfg);
    detail::check_cluster(r, root, cfg);
    cfg.source = name;
    if (r.problems.empty())
      return cfg;
    config_error err;
    for (const auto& [pos, text] : r.problems)
      err.text += (err.text.empty() ? "" : "\n") + text;
    return err;
  } catch (const toml::syntax_error& e) {
    auto loc = e.location();
    return config_error{loc.file_name() + ":" + std::to_string(loc.line()) +
                        ": TOML syntax error\n" + e.what()};
  } catch (const std::exception& e) {
    return config_error{name + ": cannot read the config: " + e.what()};
  }
}

} // namespace

// -- public functions ---------------------------------------------------------

load_result load_config_string(std::string_view toml_text,
                               const std::string& name,
                               const policy_names& policies) {
  return load_text(toml_text, name, "", policies);
}

load_result load_config_file(const std::string& path,
                             const policy_names& policies) {
  try {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      return config_error{"cannot open config file " + path +
                          ": it is a directory"};
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return config_error{"cannot open config file " + path + ": " +
                          std::strerror(errno)};
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad())
      return config_error{"cannot open config file " + path + ": read error"};
    return load_text(text.str(), path,
                     std::filesystem::path{path}.parent_path().string(),
                     policies);
  } catch (const std::exception& e) {
    return config_error{"cannot open config file " + path + ": " + e.what()};
  }
}

} // namespace tb
