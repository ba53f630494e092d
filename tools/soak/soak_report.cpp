// The report of tinybroker-soak: compact text, or JSON with --json.

#include <cstdio>
#include <string>

#include "tools/soak/soak_coordinator.hpp"

namespace tb::soak {

namespace {

// Quotes `text` as a JSON string (the report's strings are plain ASCII;
// quotes and backslashes are escaped).
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

// KiB as MiB with one decimal.
double mib(long long kib) {
  return static_cast<double>(kib) / 1024.0;
}

void print_text(const soak_config& cfg, const soak_report& r) {
  auto& g = r.group;
  auto& v = r.rss_result;
  std::printf("tinybroker-soak run %s: %.0f s of load, %.0f s in all "
              "(logs: %s)\n",
              r.run_id.c_str(), r.load_seconds, r.total_seconds,
              r.work_dir.c_str());
  std::printf("  group    published %llu (refused %llu, of those delivered "
              "all the same %llu), acked %llu, dead-lettered %llu, lost "
              "%llu\n",
              static_cast<unsigned long long>(g.published),
              static_cast<unsigned long long>(g.refused),
              static_cast<unsigned long long>(g.maybe_delivered),
              static_cast<unsigned long long>(g.acked),
              static_cast<unsigned long long>(g.dead_lettered),
              static_cast<unsigned long long>(g.lost));
  std::printf("  workers  %llu kills (SIGKILL), %llu deliveries, %llu "
              "redeliveries, %llu duplicates that were not redeliveries\n",
              static_cast<unsigned long long>(r.kills),
              static_cast<unsigned long long>(g.deliveries),
              static_cast<unsigned long long>(g.redeliveries),
              static_cast<unsigned long long>(g.duplicates));
  if (!r.victim_node.empty())
    std::printf("  cluster  group on %s; publishers on %s; %s killed %llu "
                "times (SIGKILL, with its workers) and restarted\n",
                r.owner_node.c_str(), r.stable_node.c_str(),
                r.victim_node.c_str(),
                static_cast<unsigned long long>(r.node_kills));
  if (cfg.replicas > 0)
    std::printf("  replicas %u: %llu kills hit the group's owner, %llu its "
                "replica\n",
                cfg.replicas, static_cast<unsigned long long>(r.owner_kills),
                static_cast<unsigned long long>(r.replica_kills));
  std::printf("  broker   group received %llu, acked %llu, dead-lettered "
              "%llu, redelivered %llu, pending %llu, in flight %llu%s\n",
              static_cast<unsigned long long>(r.broker_received),
              static_cast<unsigned long long>(r.broker_acked),
              static_cast<unsigned long long>(r.broker_dead_lettered),
              static_cast<unsigned long long>(r.broker_redelivered),
              static_cast<unsigned long long>(r.broker_pending),
              static_cast<unsigned long long>(r.broker_in_flight),
              r.drained ? "" : " (NOT DRAINED)");
  std::printf("  fan-out  %u subscribers received %llu, dropped %llu, out of "
              "order %llu\n",
              cfg.subscribers,
              static_cast<unsigned long long>(r.fanout_received),
              static_cast<unsigned long long>(r.fanout_dropped),
              static_cast<unsigned long long>(r.fanout_out_of_order));
  std::printf("  rss      start %.1f MiB, end %.1f MiB, peak %.1f MiB, "
              "allowed growth %.1f MiB: %s\n",
              mib(v.start_kib), mib(v.end_kib), mib(v.peak_kib),
              mib(v.allowed_kib),
              !v.judged ? "too short to judge"
              : v.flat  ? "flat"
                        : "GREW");
  std::printf("  rss/time");
  auto step = r.rss.size() > 20 ? r.rss.size() / 20 : 1;
  for (std::size_t i = 0; i < r.rss.size(); i += step)
    std::printf(" %.0fs:%.1f", r.rss[i].t, mib(r.rss[i].kib));
  std::printf(" (MiB)\n");
  if (r.broker_exit != -1 || r.broker_stop_seconds > 0)
    std::printf("  stop     broker exited %d after SIGTERM in %.2f s\n",
                r.broker_exit, r.broker_stop_seconds);
  for (auto& example : g.lost_examples)
    std::printf("  lost     %s\n", example.c_str());
  for (auto& failure : r.failures)
    std::printf("  FAILED   %s\n", failure.c_str());
  std::printf("%s\n", r.failures.empty() ? "PASS" : "FAIL");
}

void print_json(const soak_config& cfg, const soak_report& r) {
  auto& g = r.group;
  auto& v = r.rss_result;
  auto u = [](uint64_t x) {
    return std::to_string(x);
  };
  std::string out = "{";
  out += "\"run_id\":" + quoted(r.run_id);
  out += ",\"work_dir\":" + quoted(r.work_dir);
  out += ",\"pass\":" + std::string(r.failures.empty() ? "true" : "false");
  out += ",\"load_seconds\":" + std::to_string(r.load_seconds);
  out += ",\"total_seconds\":" + std::to_string(r.total_seconds);
  out += ",\"published\":" + u(g.published) + ",\"refused\":" + u(g.refused);
  out += ",\"maybe_delivered\":" + u(g.maybe_delivered);
  out +=
      ",\"acked\":" + u(g.acked) + ",\"dead_lettered\":" + u(g.dead_lettered);
  out += ",\"lost\":" + u(g.lost) + ",\"kills\":" + u(r.kills);
  out += ",\"worker_exits\":" + u(r.worker_exits);
  out += ",\"node_kills\":" + u(r.node_kills);
  out += ",\"replicas\":" + u(cfg.replicas);
  out += ",\"owner_kills\":" + u(r.owner_kills) +
         ",\"replica_kills\":" + u(r.replica_kills);
  out += ",\"deliveries\":" + u(g.deliveries);
  out += ",\"redeliveries\":" + u(g.redeliveries);
  out += ",\"duplicates\":" + u(g.duplicates);
  out += ",\"broker\":{\"received\":" + u(r.broker_received) +
         ",\"acked\":" + u(r.broker_acked) +
         ",\"dead_lettered\":" + u(r.broker_dead_lettered) +
         ",\"redelivered\":" + u(r.broker_redelivered) +
         ",\"pending\":" + u(r.broker_pending) +
         ",\"in_flight\":" + u(r.broker_in_flight) +
         ",\"exit\":" + std::to_string(r.broker_exit) +
         ",\"stop_seconds\":" + std::to_string(r.broker_stop_seconds) + "}";
  out += ",\"fanout\":{\"subscribers\":" + std::to_string(cfg.subscribers) +
         ",\"received\":" + u(r.fanout_received) +
         ",\"dropped\":" + u(r.fanout_dropped) +
         ",\"out_of_order\":" + u(r.fanout_out_of_order) + "}";
  out += ",\"rss_kib\":{\"start\":" + std::to_string(v.start_kib) +
         ",\"end\":" + std::to_string(v.end_kib) +
         ",\"peak\":" + std::to_string(v.peak_kib) +
         ",\"allowed_growth\":" + std::to_string(v.allowed_kib) +
         ",\"judged\":" + (v.judged ? "true" : "false") +
         ",\"flat\":" + (v.flat ? "true" : "false") + ",\"samples\":[";
  for (std::size_t i = 0; i < r.rss.size(); ++i)
    out += (i ? "," : "") + std::string("[") +
           std::to_string(static_cast<int>(r.rss[i].t)) + "," +
           std::to_string(r.rss[i].kib) + "]";
  out += "]},\"failures\":[";
  for (std::size_t i = 0; i < r.failures.size(); ++i)
    out += (i ? "," : "") + quoted(r.failures[i]);
  out += "]}";
  std::printf("%s\n", out.c_str());
}

} // namespace

void print_report(const soak_config& cfg, const soak_report& report) {
  if (cfg.json)
    print_json(cfg, report);
  else
    print_text(cfg, report);
  std::fflush(stdout);
}

} // namespace tb::soak
