// The console's HTTP API (issue 27): what the page at `/` asks the broker,
// on the metrics listener. No HTTP library here: net/metrics_server.cpp
// turns httplib's requests into `http_request`s and answers the
// `http_response`s, so that this logic is tested with stand-in sources.
//
//   GET  /api/stats?topic_pattern=&group_filter=&session_filter=&limit=&actors=
//        -> {"console": {...}, "stats": <the Stats reply as JSON>}
//   POST /api/groups/create (name, pattern) | delete (name) | purge (name)
//        -> {"action": ..., "group": ..., "result": ...}
//
// Who may: with `[auth]` on, only an `admin` token (bearer or a client
// certificate that stands for one) sees data or acts, else 401/403. With
// auth off, everyone on the listener sees the data, and acts only under
// `[console] allow_actions`. An action also needs the header
// `X-Tinybroker-Console: 1`, which a cross-site form cannot send (CSRF),
// and, with auth off, a `Host` that is an IP address or `localhost` (a page
// that rebinds its own DNS name to the broker cannot act).
// Every action is logged with its token's name.

#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "auth/token_table.hpp"
#include "net/stats_collector.hpp"
#include "routing/error.hpp"
#include "tinybroker.pb.h"

namespace tb {

/// One HTTP request as the console sees it.
struct http_request {
  /// `GET` or `POST`.
  std::string method;
  /// The path without the query, e.g. `/api/stats`.
  std::string path;
  /// Query and form parameters (the first of each name counts).
  std::multimap<std::string, std::string> params;
  /// The `Authorization` header, empty if absent.
  std::string authorization;
  /// The `X-Tinybroker-Console` header, empty if absent.
  std::string console_header;
  /// The `Host` header, empty if absent.
  std::string host;
  /// The subject of the verified client certificate (mutual TLS), or "".
  std::string cert_subject;
  /// The client's address, for log lines.
  std::string peer;
};

/// One HTTP response.
struct http_response {
  /// The status code.
  int status = 200;
  /// The `Content-Type`.
  std::string content_type = "application/json";
  /// The body.
  std::string body;
};

/// Called exactly once with the response, on any thread.
using http_reply = std::function<void(http_response)>;

/// Answers a console request: calls the reply exactly once, on any thread,
/// possibly before it returns. Must not block.
using console_handler = std::function<void(const http_request&, http_reply)>;

/// A group action of the console.
struct group_action {
  /// `create`, `delete` or `purge`.
  std::string kind;
  /// The group's name.
  std::string name;
  /// The pattern (create only).
  std::string pattern;
};

/// Receives the outcome of a group action: the count of messages deleted
/// or purged (0 for create), or the error.
using action_callback = std::function<void(uint64_t, const error_info&)>;

/// Receives the console's Stats reply and the groups' totals, or why there
/// is none; called once, on any thread.
using console_stats_callback = std::function<void(
    tinybroker::v1::StatsReply&, const error_info&, const group_totals&)>;

/// What the console reads and does, besides its own settings.
struct console_sources {
  /// Collects a Stats reply with the console's ordering (groups most
  /// backed up first, actors largest mailbox first; `collect_stats`
  /// with `by_load`). Must not block; the callback runs once.
  std::function<void(const tinybroker::v1::StatsRequest&,
                     console_stats_callback)>
      stats;
  /// Runs a group action through the router. Must not block; the callback
  /// runs once.
  std::function<void(const group_action&, action_callback)> act;
  /// Authenticates a request's `Authorization` value and certificate
  /// subject (auth on), counting a refusal as the gRPC door does.
  std::function<auth_outcome(std::string_view, std::string_view)> authenticate;
};

/// The console's settings (`[console]` and `[auth] enabled`).
struct console_settings {
  /// True when `[auth]` is on: only admin tokens may use the console.
  bool auth_enabled = false;
  /// `[console] allow_actions`: without auth, whether actions are allowed.
  bool allow_actions = false;
  /// The most entries of a list the page may ask for.
  uint32_t max_limit = max_stats_limit;
};

/// Returns the console's handler over `sources`.
console_handler make_console_handler(console_sources sources,
                                     console_settings settings);

/// Returns `reply` as the console's JSON: the Stats reply with proto field
/// names, every field printed (64-bit numbers as strings, as proto3 JSON
/// has them), inside `{"console": CONSOLE, "groups_total": {"pending": N,
/// "in_flight": N}, "stats": ...}`.
std::string console_json(const tinybroker::v1::StatsReply& reply,
                         const group_totals& totals,
                         const std::string& console);

} // namespace tb
