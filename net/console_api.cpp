#include "net/console_api.hpp"

#include <cstdio>
#include <optional>

#include <google/protobuf/util/json_util.h>

#include "log/log.hpp"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// The longest filter or pattern the page may send, in bytes.
constexpr size_t max_filter_bytes = 1024;

// The entries of each list when the request names no limit.
constexpr uint32_t default_console_limit = 100;

// Returns `text` as a JSON string literal.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
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
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

// Returns a JSON error response: `{"error": TEXT}`.
http_response failure(int status, const std::string& text) {
  return {status, "application/json", "{\"error\":" + quoted(text) + "}\n"};
}

// Returns the HTTP status of a refusal with code `code`.
int http_status(ec code) {
  switch (code) {
  case ec::invalid_topic:
  case ec::invalid_pattern:
  case ec::invalid_group_name:
  case ec::invalid_request:
  case ec::reserved_topic:
    return 400;
  case ec::unauthenticated:
    return 401;
  case ec::permission_denied:
    return 403;
  case ec::unknown_group:
  case ec::unknown_subscription:
    return 404;
  case ec::group_pattern_conflict:
    return 409;
  case ec::limit_exceeded:
  case ec::group_full:
    return 429;
  default:
    return 503;
  }
}

// Returns true if `host` (a Host header) names an IP address or
// localhost, with or without a port: not a DNS name a web page could
// rebind to the broker's address.
bool literal_host(std::string_view host) {
  if (!host.empty() && host.front() == '[')
    return host.find(']') != std::string_view::npos; // an IPv6 literal
  host = host.substr(0, host.find(':'));
  if (host == "localhost")
    return true;
  return !host.empty() &&
         host.find_first_not_of("0123456789.") == std::string_view::npos;
}

// Returns the first value of parameter `name`, or "".
std::string param(const http_request& req, const std::string& name) {
  auto i = req.params.find(name);
  return i == req.params.end() ? std::string{} : i->second;
}

// The console's state, shared by the handler's copies.
struct console_state {
  console_sources sources;
  console_settings settings;

  // Returns a refusal if `req` may not use the console, else nothing;
  // sets `token` to the name of its token ("" with auth off).
  std::optional<http_response> refusal(const http_request& req,
                                       std::string& token) {
    if (!settings.auth_enabled)
      return std::nullopt;
    auto who = sources.authenticate(req.authorization, req.cert_subject);
    if (who.error)
      return failure(401, who.error.text + " (the console needs an admin "
                                           "token: Authorization: Bearer "
                                           "TOKEN)");
    if (!may_administer(who.grant))
      return failure(403, describe_client(who.grant) +
                              " may not use the console (it needs admin = "
                              "true)");
    token = who.grant.token;
    return std::nullopt;
  }

  // Returns the `console` object of a stats answer.
  std::string describe(const std::string& token) const {
    return std::string{"{\"auth\":"} +
           (settings.auth_enabled ? "true" : "false") +
           ",\"actions\":" + (actions_allowed() ? "true" : "false") +
           ",\"token\":" + quoted(token) + "}";
  }

  // Returns true if actions are allowed to whoever passed `refusal`.
  bool actions_allowed() const {
    return settings.auth_enabled || settings.allow_actions;
  }

  void stats(const http_request& req, const std::string& token,
             http_reply reply) {
    pb::StatsRequest request;
    request.set_topic_pattern(param(req, "topic_pattern"));
    request.set_group_filter(param(req, "group_filter"));
    request.set_session_filter(param(req, "session_filter"));
    for (auto* name : {"topic_pattern", "group_filter", "session_filter"})
      if (param(req, name).size() > max_filter_bytes)
        return reply(failure(400, std::string{name} + " has more than " +
                                      std::to_string(max_filter_bytes) +
                                      " bytes"));
    auto limit = param(req, "limit");
    uint32_t n = default_console_limit;
    if (!limit.empty()) {
      if (limit.size() > 6 ||
          limit.find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(limit) < 1 || std::stoul(limit) > settings.max_limit)
        return reply(failure(400, "limit \"" + limit.substr(0, 16) +
                                      "\" is not a number from 1 to " +
                                      std::to_string(settings.max_limit)));
      n = static_cast<uint32_t>(std::stoul(limit));
    }
    request.set_limit(n);
    auto actors = param(req, "actors");
    if (actors != "" && actors != "0" && actors != "1" && actors != "true" &&
        actors != "false")
      return reply(failure(400, "actors \"" + actors.substr(0, 16) +
                                    "\" is not 0, 1, true or false"));
    request.set_actors(actors == "1" || actors == "true");
    auto console = describe(token);
    sources.stats(request, [reply, console](pb::StatsReply& stats,
                                            const error_info& err,
                                            const group_totals& totals) {
      if (err)
        return reply(failure(http_status(err.code), err.text));
      reply({200, "application/json", console_json(stats, totals, console)});
    });
  }

  void act(const http_request& req, const std::string& token,
           const std::string& kind, http_reply reply) {
    if (req.method != "POST")
      return reply(failure(405, "actions are POST requests"));
    if (req.console_header != "1")
      return reply(failure(403, "actions need the header "
                                "X-Tinybroker-Console: 1 (the console page "
                                "sends it; a cross-site form cannot)"));
    if (!actions_allowed())
      return reply(failure(403, "actions are off: auth is off and [console] "
                                "allow_actions is false"));
    if (!settings.auth_enabled && !literal_host(req.host))
      return reply(failure(403, "without auth, actions are taken only on "
                                "requests to an IP address or localhost, "
                                "not to \"" +
                                    req.host.substr(0, 64) +
                                    "\" (a DNS name a web page could point "
                                    "at the broker)"));
    group_action action{kind, param(req, "name"), param(req, "pattern")};
    if (action.name.empty())
      return reply(failure(400, kind + " needs a group name (parameter "
                                       "name)"));
    if (kind == "create" && action.pattern.empty())
      return reply(failure(400, "create needs a pattern (parameter "
                                "pattern)"));
    auto who = token.empty() ? std::string{"(auth off)"} : token;
    sources.act(action, [reply, action, who, peer = req.peer](
                            uint64_t count, const error_info& err) {
      if (err) {
        log::info("console action refused", {{"action", action.kind},
                                             {"group", action.name},
                                             {"token", who},
                                             {"peer", peer},
                                             {"error", err.text}});
        return reply(failure(http_status(err.code), err.text));
      }
      log::info("console action", {{"action", action.kind},
                                   {"group", action.name},
                                   {"token", who},
                                   {"peer", peer},
                                   {"messages", count}});
      reply({200, "application/json",
             "{\"action\":" + quoted(action.kind) +
                 ",\"group\":" + quoted(action.name) +
                 ",\"messages\":" + std::to_string(count) + "}\n"});
    });
  }

  void handle(const http_request& req, http_reply reply) {
    std::string token;
    if (auto refused = refusal(req, token))
      return reply(std::move(*refused));
    if (req.path == "/api/stats")
      return stats(req, token, std::move(reply));
    static const std::string prefix = "/api/groups/";
    if (req.path.rfind(prefix, 0) == 0) {
      auto kind = req.path.substr(prefix.size());
      if (kind == "create" || kind == "delete" || kind == "purge")
        return act(req, token, kind, std::move(reply));
    }
    reply(failure(404, "no console API at " + req.path.substr(0, 64)));
  }
};

} // namespace

console_handler make_console_handler(console_sources sources,
                                     console_settings settings) {
  auto st = std::make_shared<console_state>();
  st->sources = std::move(sources);
  st->settings = settings;
  return [st](const http_request& req, http_reply reply) {
    st->handle(req, std::move(reply));
  };
}

std::string console_json(const pb::StatsReply& reply,
                         const group_totals& totals,
                         const std::string& console) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string stats;
  if (!google::protobuf::util::MessageToJsonString(reply, &stats, options).ok())
    stats = "{}";
  return "{\"console\":" + console +
         ",\"groups_total\":{\"pending\":" + std::to_string(totals.pending) +
         ",\"in_flight\":" + std::to_string(totals.in_flight) +
         "},\"stats\":" + stats + "}\n";
}

} // namespace tb
