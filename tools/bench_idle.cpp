// Scenario `idle` of tinybroker-bench: the broker's memory per idle
// session. Reads the broker's resident memory (VmRSS of /proc/PID/status),
// opens S sessions that each hold one fan-out subscription and wait for its
// confirmation, reads the memory again and reports the difference per
// session. The broker must run on this host (its pid is given).

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "net/client.hpp"
#include "tools/bench_report.hpp"

namespace tb::bench {

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

// Returns the resident memory of process `pid` in KiB, or -1 if it cannot
// be read.
long long resident_kib(int pid) {
  std::ifstream status{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) != 0)
      continue;
    std::istringstream fields{line.substr(6)};
    long long kib = -1;
    fields >> kib;
    return kib;
  }
  return -1;
}

// Returns the subscriptions acknowledged on `sessions`, waiting up to 10 s
// for each.
unsigned await_subscribed(std::vector<std::unique_ptr<client::session>>& all) {
  unsigned confirmed = 0;
  for (auto& session : all) {
    std::vector<pb::ServerFrame> skipped;
    if (session->wait_for(pb::ServerFrame::kSubscribed, 10s, &skipped))
      ++confirmed;
    for (auto& frame : skipped)
      if (frame.has_error())
        std::fprintf(stderr, "tinybroker-bench: subscribe refused: %s\n",
                     frame.error().error().message().c_str());
  }
  return confirmed;
}

} // namespace

int run_idle(client::connection& conn, const run_config& cfg) {
  auto before = resident_kib(cfg.broker_pid);
  if (before < 0) {
    std::fprintf(stderr,
                 "tinybroker-bench: cannot read the memory of process %d "
                 "(--broker-pid must name a broker on this host)\n",
                 cfg.broker_pid);
    return exit_usage;
  }
  auto run_id = random_run_id();
  std::vector<std::unique_ptr<client::session>> sessions;
  sessions.reserve(cfg.sessions);
  auto start = now_ns();
  for (unsigned i = 0; i < cfg.sessions; ++i) {
    sessions.push_back(conn.open_session());
    sessions.back()->subscribe(
        1, "bench." + run_id + ".idle." + std::to_string(i), "", 1);
  }
  auto confirmed = await_subscribed(sessions);
  auto after = resident_kib(cfg.broker_pid);
  auto elapsed = seconds_between(start, now_ns());
  auto per_session =
      confirmed > 0 ? static_cast<double>(after - before) * 1024.0 / confirmed
                    : 0.0;
  if (cfg.json) {
    std::printf("{\"scenario\":%s,\"server\":%s,\"sessions\":%u,"
                "\"subscribed\":%u,\"elapsed_s\":%.6f,\"rss_before_kib\":%lld,"
                "\"rss_after_kib\":%lld,\"bytes_per_session\":%.0f}\n",
                json_string(cfg.scenario).c_str(),
                json_string(cfg.server).c_str(), cfg.sessions, confirmed,
                elapsed, before, after, per_session);
  } else {
    std::printf("%-22s %s\n", "scenario", cfg.scenario.c_str());
    std::printf("%-22s %u\n", "sessions", cfg.sessions);
    std::printf("%-22s %u\n", "subscribed", confirmed);
    std::printf("%-22s %.3f\n", "elapsed (s)", elapsed);
    std::printf("%-22s %lld\n", "broker RSS before (KiB)", before);
    std::printf("%-22s %lld\n", "broker RSS after (KiB)", after);
    std::printf("%-22s %.0f\n", "bytes per session", per_session);
  }
  std::fflush(stdout);
  for (auto& session : sessions)
    session->close(2s);
  return confirmed == cfg.sessions ? exit_ok : exit_lost;
}

} // namespace tb::bench
