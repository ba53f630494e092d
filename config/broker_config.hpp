// The broker's configuration as plain values, with the built-in defaults.
//
// Every member initializer below is the built-in default: a default-built
// `broker_config` is what `tinybroker` runs on without `--config` (spec 9).
// `config/config_loader.hpp` fills these structs from a TOML file; this
// header knows nothing of TOML, so any translation unit may include it.
// docs/configuration.md lists every key with its meaning.

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "config/auth_config.hpp"
#include "config/cluster_config.hpp"
#include "config/tls_config.hpp"

namespace tb {

/// What a group does with a new message when it holds its maximum (spec 6).
enum class overflow_policy : uint8_t {
  /// Refuse the new message: the publisher's confirm says RESOURCE_EXHAUSTED.
  reject,
  /// Drop the oldest held message that is not in flight, and count it.
  drop_oldest,
};

/// Returns the configuration name of `x`: `"reject"` or `"drop_oldest"`.
inline std::string_view to_string(overflow_policy x) noexcept {
  return x == overflow_policy::reject ? "reject" : "drop_oldest";
}

/// Sets `out` from its configuration name and returns true, or returns false
/// and leaves `out` alone when `text` names no policy.
inline bool from_string(std::string_view text, overflow_policy& out) noexcept {
  if (text == "reject") {
    out = overflow_policy::reject;
    return true;
  }
  if (text == "drop_oldest") {
    out = overflow_policy::drop_oldest;
    return true;
  }
  return false;
}

/// What a group does with a message that expired while waiting (issue 29).
enum class expiry_action : uint8_t {
  /// Publish it to the dead letter topic with reason `expired`.
  dead_letter,
  /// Drop it.
  drop,
};

/// Returns the configuration name of `x`: `"dead_letter"` or `"drop"`.
inline std::string_view to_string(expiry_action x) noexcept {
  return x == expiry_action::dead_letter ? "dead_letter" : "drop";
}

/// Sets `out` from its configuration name and returns true, or returns false
/// and leaves `out` alone when `text` names no action.
inline bool from_string(std::string_view text, expiry_action& out) noexcept {
  if (text == "dead_letter") {
    out = expiry_action::dead_letter;
    return true;
  }
  if (text == "drop") {
    out = expiry_action::drop;
    return true;
  }
  return false;
}

/// The settings of one consumer group (spec 6).
struct group_settings {
  /// The topic pattern the group holds messages of; empty in the defaults.
  std::string pattern;
  /// How long a delivery may stay unanswered before it is redelivered.
  std::chrono::milliseconds ack_wait{30000};
  /// Attempts before a message goes to the dead letter topic; 0 = unlimited.
  uint32_t max_deliveries = 5;
  /// The most messages the group holds (queued and in flight).
  uint64_t max_pending_messages = 1'000'000;
  /// The most payload bytes the group holds (queued and in flight).
  uint64_t max_pending_bytes = 1ull << 30;
  /// What happens to a new message when the group is full.
  overflow_policy overflow = overflow_policy::reject;
  /// Dead letter topic: empty means `$dlq.<group>`, `"none"` drops.
  std::string dead_letter;
  /// The registered name of the policy actor that picks a member (spec 8).
  std::string policy = "round_robin";
  /// The longest a message waits for a delivery, from when it becomes
  /// deliverable; zero = no limit (a message's own TTL still applies).
  std::chrono::milliseconds max_age{0};
  /// What happens to a message that expired (TTL or max_age) while waiting.
  expiry_action on_expiry = expiry_action::dead_letter;
  /// The highest priority the group tells apart (1 to 9); higher priorities
  /// count as this one.
  uint8_t max_priority = 9;
  /// How long the topics the group holds remember a message id (issue 28):
  /// a topic's window is the longest of `[dedup] window` and the windows of
  /// its groups. Zero: the broker's window.
  std::chrono::milliseconds dedup_window{0};
  /// How many other nodes keep a copy of the group's messages (issue 32):
  /// 0 or 1. A publish is confirmed once the replica has it; the replica
  /// takes over when the owner's node dies (docs/cluster.md, "Replicas").
  uint32_t replicas = 0;
};

/// Returns true if `x` and `y` hold the same settings.
inline bool operator==(const group_settings& x, const group_settings& y) {
  return std::tie(x.pattern, x.ack_wait, x.max_deliveries,
                  x.max_pending_messages, x.max_pending_bytes, x.overflow,
                  x.dead_letter, x.policy, x.max_age, x.on_expiry,
                  x.max_priority, x.dedup_window, x.replicas) ==
         std::tie(y.pattern, y.ack_wait, y.max_deliveries,
                  y.max_pending_messages, y.max_pending_bytes, y.overflow,
                  y.dead_letter, y.policy, y.max_age, y.on_expiry,
                  y.max_priority, y.dedup_window, y.replicas);
}

/// Returns true if `x` and `y` differ in any setting.
inline bool operator!=(const group_settings& x, const group_settings& y) {
  return !(x == y);
}

/// The largest `limits.max_topic_bytes` (a message keeps its topic's size in
/// 16 bits).
inline constexpr uint64_t max_topic_bytes_limit = 65535;

/// The largest `limits.max_delay` in milliseconds, 49 days (a message keeps
/// its delay in 32 bits of milliseconds).
inline constexpr uint64_t max_delay_limit_ms = 49ull * 24 * 3'600'000;

/// Bounds that keep the broker's memory and work per request bounded.
struct limits_config {
  /// The largest message (payload + headers + key) a publisher may send.
  std::size_t max_message_bytes = 1 << 20;
  /// The longest topic, in bytes.
  std::size_t max_topic_bytes = 255;
  /// The most `.`-separated tokens in a topic or pattern.
  std::size_t max_topic_tokens = 32;
  /// The most messages in one publish frame or `Publish` call.
  std::size_t max_publish_batch = 4096;
  /// The most subscriptions in one SubscribeBatch frame.
  std::size_t max_subscribe_batch = 4096;
  /// The messages one fan-out subscription buffers before it loses the oldest.
  std::size_t subscription_buffer = 65536;
  /// The most subscriptions (fan-out and group) one session may hold.
  std::size_t max_subscriptions_per_session = 10000;
  /// The most bytes of outgoing frames queued for one session.
  std::size_t max_session_buffered_bytes = 64 << 20;
  /// The most unacknowledged group deliveries one session may hold.
  std::size_t max_in_flight_per_session = 65536;
  /// The most deliveries the broker packs into one server frame.
  std::size_t max_frame_messages = 1024;
  /// The most Session streams served at once; more end RESOURCE_EXHAUSTED.
  std::size_t max_sessions = 10000;
  /// The most consumer groups; creating or auto-creating more is refused.
  std::size_t max_groups = 10000;
  /// The most live topics; publishing to a new topic beyond it is refused
  /// (idle topics expire after `topic_idle_timeout`).
  std::size_t max_topics = 1'000'000;
  /// The most topic routes one publishing session caches; a session that
  /// publishes to more topics looks the others up again (a router round
  /// trip each).
  std::size_t max_routes_per_session = 131'072;
  /// How far ahead a publisher may schedule a message (`delay_ms`,
  /// `not_before_unix_ms`); at most 49 days (delays are kept in 32 bits of
  /// milliseconds).
  std::chrono::milliseconds max_delay{7LL * 24 * 3600 * 1000};
  /// The most delayed messages one topic holds for its fan-out subscribers
  /// until their due time; more are refused (RESOURCE_EXHAUSTED).
  std::size_t max_delayed_fanout_per_topic = 100'000;
  /// The most delayed messages all topics together hold for their fan-out
  /// subscribers; more are refused (RESOURCE_EXHAUSTED).
  std::size_t max_delayed_fanout = 1'000'000;
  /// The most requests one session may have waiting for their reply, and
  /// the most requests it may hold received and unanswered.
  std::size_t max_pending_requests_per_session = 10'000;
};

/// Returns true if `x` and `y` hold the same limits.
inline bool operator==(const limits_config& x, const limits_config& y) {
  return std::tie(x.max_message_bytes, x.max_topic_bytes, x.max_topic_tokens,
                  x.max_publish_batch, x.max_subscribe_batch,
                  x.subscription_buffer, x.max_subscriptions_per_session,
                  x.max_session_buffered_bytes, x.max_in_flight_per_session,
                  x.max_frame_messages, x.max_sessions, x.max_groups,
                  x.max_topics, x.max_routes_per_session, x.max_delay,
                  x.max_delayed_fanout_per_topic, x.max_delayed_fanout,
                  x.max_pending_requests_per_session) ==
         std::tie(y.max_message_bytes, y.max_topic_bytes, y.max_topic_tokens,
                  y.max_publish_batch, y.max_subscribe_batch,
                  y.subscription_buffer, y.max_subscriptions_per_session,
                  y.max_session_buffered_bytes, y.max_in_flight_per_session,
                  y.max_frame_messages, y.max_sessions, y.max_groups,
                  y.max_topics, y.max_routes_per_session, y.max_delay,
                  y.max_delayed_fanout_per_topic, y.max_delayed_fanout,
                  y.max_pending_requests_per_session);
}

/// Returns true if `x` and `y` differ in any limit.
inline bool operator!=(const limits_config& x, const limits_config& y) {
  return !(x == y);
}

/// The Prometheus endpoint (`GET /metrics` over HTTP, spec 11).
struct metrics_config {
  /// The HTTP listen address, `HOST:PORT`; empty means no metrics listener
  /// (`"off"` in the file and on the command line).
  std::string listen = "127.0.0.1:7401";
  /// Whether each scrape lists every topic with its own series.
  bool per_topic = false;
  /// Whether the listener speaks HTTPS with the `[tls]` certificate (and
  /// asks for client certificates when `[tls] client_ca` is set); on by
  /// default when `[tls]` is set.
  bool tls = false;

  /// Returns true if the metrics listener runs.
  bool enabled() const noexcept {
    return !listen.empty();
  }
};

/// Returns true if `x` and `y` hold the same metrics settings.
inline bool operator==(const metrics_config& x, const metrics_config& y) {
  return x.listen == y.listen && x.per_topic == y.per_topic && x.tls == y.tls;
}

/// Returns true if `x` and `y` differ in any metrics setting.
inline bool operator!=(const metrics_config& x, const metrics_config& y) {
  return !(x == y);
}

/// The console in the browser (`[console]`, issue 27), served on the
/// metrics listener: docs/console.md.
struct console_config {
  /// Whether the metrics listener serves the console at `/`.
  bool enabled = true;
  /// Without `[auth]`: whether the console may create, delete and purge
  /// groups (with auth on, admin tokens may, and only they see it at all).
  bool allow_actions = false;
};

/// Returns true if `x` and `y` hold the same console settings.
inline bool operator==(const console_config& x, const console_config& y) {
  return x.enabled == y.enabled && x.allow_actions == y.allow_actions;
}

/// Returns true if `x` and `y` differ in any console setting.
inline bool operator!=(const console_config& x, const console_config& y) {
  return !(x == y);
}

/// De-duplication of messages that carry a `msg_id` (`[dedup]`, issue 28).
struct dedup_config {
  /// How long a topic remembers a message id: a second message with it
  /// within this time is a duplicate.
  std::chrono::milliseconds window{120000};
  /// The most ids the broker remembers (split evenly over the topic
  /// shards); the oldest is forgotten first when a shard holds its share.
  std::size_t max_ids = 1'000'000;
};

/// Returns true if `x` and `y` hold the same settings.
inline bool operator==(const dedup_config& x, const dedup_config& y) {
  return x.window == y.window && x.max_ids == y.max_ids;
}

/// Returns true if `x` and `y` differ in any setting.
inline bool operator!=(const dedup_config& x, const dedup_config& y) {
  return !(x == y);
}

/// Everything `tinybroker` reads at start; default-built = built-in defaults.
struct broker_config {
  /// The gRPC listen address, `HOST:PORT`; loopback by default (spec 10).
  std::string listen = "127.0.0.1:7400";
  /// The lowest log level written: trace, debug, info, warn, error or off.
  std::string log_level = "info";
  /// How log lines are written: "text" (for people) or "json" (one JSON
  /// object per line, for log shippers).
  std::string log_format = "text";
  /// How often the broker logs a one-line summary of its counters; zero
  /// (`"0s"` or `"off"` in the file) turns the summary off.
  std::chrono::milliseconds log_summary_interval{60000};
  /// How long shutdown waits for streams to end before the process exits.
  std::chrono::milliseconds shutdown_grace{5000};
  /// How long a topic with no traffic and no subscriber keeps its counters.
  std::chrono::milliseconds topic_idle_timeout{60000};
  /// Whether the standard gRPC health service is served.
  bool health_service = true;
  /// Whether gRPC server reflection is served.
  bool reflection = true;
  /// How Session streams are served (`[grpc] transport`): "cq" (gRPC's
  /// completion-queue API with the broker's own polling thread, which runs
  /// the session actors it wakes) or "callback" (gRPC's callback API and
  /// its threads). The unary calls use the callback API either way.
  std::string grpc_transport = "callback";
  /// The Prometheus metrics endpoint.
  metrics_config metrics;
  /// The console on the metrics listener.
  console_config console;
  /// The actor scheduler's worker threads; 0 = the number of cores.
  std::size_t worker_threads = 0;
  /// The actor scheduler: "handoff" (one queue; a message between actors
  /// wakes no second worker while one suffices), "sharing" (CAF's: one
  /// queue, every enqueue wakes an idle worker) or "stealing" (a queue per
  /// worker; idle workers poll and sleep).
  std::string scheduler = "handoff";
  /// Bounds on messages, topics, batches and sessions.
  limits_config limits;
  /// De-duplication of messages with a `msg_id`.
  dedup_config dedup;
  /// Whether joining an unknown group creates it with `group_defaults`.
  bool auto_create_groups = true;
  /// Settings of groups created without settings of their own.
  group_settings group_defaults;
  /// Groups declared in the config, by name; they exist from the start.
  std::map<std::string, group_settings> groups;
  /// TLS of the gRPC listener (and of the metrics listener).
  tls_config tls;
  /// Token authentication and permissions.
  auth_config auth;
  /// The cluster this node belongs to (`[cluster]`); none by default.
  cluster_config cluster;
  /// Where this config came from: a file path or "built-in defaults".
  std::string source = "built-in defaults";
};

/// Returns true if `x` and `y` are equal in every member, `source` included.
inline bool operator==(const broker_config& x, const broker_config& y) {
  return std::tie(x.listen, x.log_level, x.log_format, x.log_summary_interval,
                  x.shutdown_grace, x.topic_idle_timeout, x.health_service,
                  x.reflection, x.grpc_transport, x.metrics, x.console,
                  x.worker_threads, x.scheduler, x.limits, x.dedup,
                  x.auto_create_groups, x.group_defaults, x.groups, x.tls,
                  x.auth, x.cluster, x.source) ==
         std::tie(y.listen, y.log_level, y.log_format, y.log_summary_interval,
                  y.shutdown_grace, y.topic_idle_timeout, y.health_service,
                  y.reflection, y.grpc_transport, y.metrics, y.console,
                  y.worker_threads, y.scheduler, y.limits, y.dedup,
                  y.auto_create_groups, y.group_defaults, y.groups, y.tls,
                  y.auth, y.cluster, y.source);
}

/// Returns true if `x` and `y` differ in any member.
inline bool operator!=(const broker_config& x, const broker_config& y) {
  return !(x == y);
}

} // namespace tb
