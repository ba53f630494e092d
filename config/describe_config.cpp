// The one-line-per-section summary of a loaded config that the broker logs
// at start (`describe`, config/config_loader.hpp).

#include "config/config_loader.hpp"

#include <sstream>

namespace tb {

namespace {

using detail::size_units;
using detail::time_units;
using detail::unit;

// Formats `n` with the largest unit of `units` that divides it; the last
// unit's factor must be 1.
template <size_t N>
std::string format_scaled(uint64_t n, const unit (&units)[N]) {
  for (const auto& u : units)
    if (n % u.factor == 0 && (n != 0 || u.factor == 1))
      return std::to_string(n / u.factor) + std::string(u.name);
  return std::to_string(n);
}

} // namespace

std::string describe(const broker_config& cfg) {
  auto ms = [](std::chrono::milliseconds d) {
    return format_scaled(static_cast<uint64_t>(d.count()), time_units);
  };
  std::ostringstream os;
  os << std::boolalpha;
  auto group = [&](const std::string& name, const group_settings& g) {
    os << "\n"
       << name << ": pattern " << (g.pattern.empty() ? "-" : g.pattern)
       << ", ack_wait " << ms(g.ack_wait) << ", max_deliveries "
       << g.max_deliveries << ", max_pending " << g.max_pending_messages << "/"
       << format_scaled(g.max_pending_bytes, size_units) << ", overflow "
       << to_string(g.overflow) << ", dead_letter "
       << (g.dead_letter.empty() ? "$dlq.<group>" : g.dead_letter)
       << ", policy " << g.policy << ", dedup_window "
       << (g.dedup_window.count() == 0 ? "broker's" : ms(g.dedup_window));
    // Issue 29's settings, when not the defaults.
    if (g.max_age.count() != 0)
      os << ", max_age " << ms(g.max_age);
    if (g.on_expiry != expiry_action::dead_letter)
      os << ", on_expiry " << to_string(g.on_expiry);
    if (g.max_priority != 9)
      os << ", max_priority " << int{g.max_priority};
  };
  const auto& l = cfg.limits;
  os << "config " << cfg.source << ": listen " << cfg.listen << ", log_level "
     << cfg.log_level << ", log_format " << cfg.log_format
     << ", log_summary_interval "
     << (cfg.log_summary_interval.count() == 0 ? "off"
                                               : ms(cfg.log_summary_interval))
     << ", worker_threads " << cfg.worker_threads
     << (cfg.worker_threads == 0 ? " (one per core)" : "") << ", scheduler "
     << cfg.scheduler << ", shutdown_grace " << ms(cfg.shutdown_grace)
     << ", topic_idle_timeout " << ms(cfg.topic_idle_timeout)
     << ", health_service " << cfg.health_service << ", reflection "
     << cfg.reflection << ", grpc transport " << cfg.grpc_transport
     << "\nmetrics: ";
  if (cfg.metrics.enabled())
    os << "listen " << cfg.metrics.listen << ", per_topic "
       << cfg.metrics.per_topic << ", tls " << cfg.metrics.tls;
  else
    os << "off";
  os << "\nconsole: ";
  if (!cfg.console.enabled)
    os << "off";
  else if (!cfg.metrics.enabled())
    os << "off (it is served on the metrics listener, which is off)";
  else
    os << "on at / of the metrics listener, allow_actions "
       << cfg.console.allow_actions
       << (cfg.auth.enabled ? " (auth on: admin tokens only)" : "");
  os << "\ntls: ";
  if (cfg.tls.enabled())
    os << "cert " << cfg.tls.cert << ", key " << cfg.tls.key << ", client_ca "
       << (cfg.tls.mutual() ? cfg.tls.client_ca + " (mutual TLS)"
                            : std::string{"- (no client certificates)"});
  else
    os << "off (plain text)";
  os << "\nlimits: " << format_scaled(l.max_message_bytes, size_units)
     << "/message, " << l.max_topic_bytes << " bytes/" << l.max_topic_tokens
     << " tokens per topic, " << l.max_publish_batch << "/publish, "
     << l.max_subscribe_batch << "/subscribe batch, " << l.subscription_buffer
     << "/subscription buffer, " << l.max_frame_messages
     << "/frame; per session " << l.max_subscriptions_per_session
     << " subscriptions, " << l.max_in_flight_per_session << " in flight, "
     << l.max_pending_requests_per_session << " pending requests, "
     << format_scaled(l.max_session_buffered_bytes, size_units)
     << " buffered; at most " << l.max_sessions << " sessions, " << l.max_groups
     << " groups, " << l.max_topics << " topics, " << l.max_routes_per_session
     << " cached routes per session"
     << "\ndedup: window " << ms(cfg.dedup.window) << ", max_ids "
     << cfg.dedup.max_ids << "\ngroups: auto_create " << cfg.auto_create_groups
     << ", " << cfg.groups.size() << " declared";
  group("group defaults", cfg.group_defaults);
  for (const auto& [name, g] : cfg.groups)
    group("group " + name, g);
  os << "\nauth: ";
  if (cfg.auth.enabled) {
    os << "on, " << cfg.auth.tokens.size() << " tokens";
    for (size_t i = 0; i < cfg.auth.tokens.size(); ++i)
      os << (i == 0 ? " (" : ", ") << cfg.auth.tokens[i].name
         << (i + 1 == cfg.auth.tokens.size() ? ")" : "");
  } else {
    os << "off";
  }
  const auto& c = cfg.cluster;
  os << "\ncluster: ";
  if (c.enabled()) {
    os << "node " << c.node_name << ", listen " << c.listen << ", peers ";
    for (size_t i = 0; i < c.peers.size(); ++i)
      os << (i == 0 ? "" : " ") << c.peers[i];
    os << (c.peers.empty() ? "none" : "") << ", heartbeat " << ms(c.heartbeat)
       << ", dead_after " << ms(c.dead_after) << ", link window "
       << c.link_window_batches << " batches, buffer "
       << format_scaled(c.link_buffer_bytes, size_units) << ", tls " << c.tls
       << ", quorum " << (c.quorum == quorum_rule::none ? "none" : "majority");
  } else {
    os << "off (a single node)";
  }
  return os.str();
}

} // namespace tb
