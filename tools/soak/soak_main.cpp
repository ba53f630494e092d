// tinybroker-soak: the command line. Without a role it is the coordinator
// (tools/soak/soak_coordinator.cpp); `publisher`, `subscriber`,
// `dead-letters` and `worker` are the roles it starts as child processes
// (tools/soak/soak_roles.cpp), also usable alone, as the fault tests do.

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "client/security.hpp"
#include "config/config_loader.hpp"
#include "tools/soak/soak.hpp"
#include "tools/soak/soak_coordinator.hpp"
#include "tools/soak/soak_process.hpp"

namespace {

using namespace tb::soak;

// Parses a duration flag with the shared command-line syntax (500ms, 90s,
// 10m; a bare number is refused); nothing if malformed or not positive.
std::optional<std::chrono::milliseconds> parse_duration(const std::string& s) {
  auto value = tb::parse_flag_duration(s);
  if (!value || value->count() <= 0)
    return std::nullopt;
  return value;
}

// Adds the options every role takes to `cmd`.
void add_role_options(CLI::App& cmd, role_config& cfg) {
  cmd.add_option("--server", cfg.server, "the broker, HOST:PORT")->required();
  cmd.add_option("--log", cfg.log, "the file to append records to")->required();
  cmd.add_option("--ready", cfg.ready_file, "a file to create once subscribed");
  cmd.add_option("--pattern", cfg.pattern, "the pattern to subscribe to");
}

} // namespace

int main(int argc, char** argv) {
  soak_config cfg;
  role_config role;
  std::string duration = "10m", kill_every = "2s", drain = "60s",
              node_kill_every = "10s";
  std::string die_at = "none";
  bool quick = false;
  long long role_duration_ms = 60000, role_work_us = 0;
  CLI::App app{
      "tinybroker-soak: a bounded soak of tinybroker (docs/operations.md, "
      "\"Soak test\"). Starts a broker on a free loopback port (or uses "
      "--server), publisher, fan-out subscriber and group worker processes, "
      "kills and restarts workers at random with SIGKILL, drains the group "
      "and checks that every message was acked exactly once or "
      "dead-lettered, duplicates only as redeliveries, and that the "
      "broker's RSS stayed flat. Exit 0 when every check passed, 1 when one "
      "failed, 2 on a usage or setup error."};
  app.set_version_flag("--version",
                       std::string{"tinybroker-soak "} + TINYBROKER_VERSION);
  app.add_option("--duration", duration,
                 "how long to publish: 90s, 10m, ... (default 10m)");
  app.add_flag("--quick", quick, "the 1-minute mode CI runs (--duration 1m)");
  app.add_option("--server", cfg.server,
                 "use this running broker (loopback HOST:PORT)");
  app.add_option("--broker-pid", cfg.broker_pid,
                 "the running broker's pid, for RSS (with --server)");
  app.add_option("--broker", cfg.broker_binary,
                 "the broker program to start (default: tinybroker next to "
                 "this program)");
  app.add_option("--publishers", cfg.publishers, "publisher processes")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--rate", cfg.rate, "messages per second per publisher")
      ->check(CLI::Range(1.0, 100000.0));
  app.add_option("--subscribers", cfg.subscribers, "fan-out subscribers")
      ->check(CLI::Range(0u, 64u));
  app.add_option("--workers", cfg.workers, "group worker processes")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--nodes", cfg.nodes,
                 "broker nodes: 1, or 3 for a cluster whose workers' node is "
                 "killed and restarted (docs/operations.md)")
      ->check(CLI::IsMember({1u, 3u}));
  app.add_option("--replicas", cfg.replicas,
                 "with --nodes 3: the group's replicas, 0 or 1 (the node "
                 "kills then hit its owner and its replica in turn)")
      ->check(CLI::IsMember({0u, 1u}));
  app.add_option("--node-kill-every", node_kill_every,
                 "mean time between node kills with --nodes 3 (default 10s)");
  app.add_option("--kill-every", kill_every,
                 "mean time between worker kills (default 2s)");
  app.add_option("--work-us", cfg.work_us,
                 "workers' microseconds of work per delivery (default 1000)");
  app.add_option("--reject-every", cfg.reject_every,
                 "workers reject one message in this many (0: none)");
  app.add_option("--seed", cfg.seed, "random seed (default: random)");
  app.add_option("--rss-margin-pct", cfg.rss_margin_pct,
                 "allowed RSS growth in percent (default 20)");
  app.add_option("--rss-margin-mib", cfg.rss_margin_mib,
                 "allowed RSS growth in MiB (default 8; the larger applies)");
  app.add_option("--drain-timeout", drain,
                 "how long the group may take to drain (default 60s)");
  app.add_option("--work-dir", cfg.work_dir, "where the logs go");
  app.add_flag("--keep-logs", cfg.keep_logs,
               "keep the work directory after a passing run");
  app.add_flag("--json", cfg.json, "print the report as JSON");

  auto* publisher = app.add_subcommand("publisher", "role: a publisher");
  add_role_options(*publisher, role);
  publisher->add_option("--index", role.index, "the publisher's number");
  publisher->add_option("--rate", role.rate, "messages per second");
  publisher->add_option("--duration-ms", role_duration_ms, "how long");
  publisher->add_option("--prefix", role.topic_prefix, "topic prefix");
  auto* subscriber = app.add_subcommand("subscriber", "role: fan-out");
  add_role_options(*subscriber, role);
  auto* dead = app.add_subcommand("dead-letters", "role: records keys");
  add_role_options(*dead, role);
  auto* worker = app.add_subcommand("worker", "role: a group worker");
  add_role_options(*worker, role);
  worker->add_option("--group", role.group, "the consumer group");
  worker->add_option("--max-in-flight", role.max_in_flight, "prefetch");
  worker->add_option("--reject-every", role.reject_every,
                     "reject sequence numbers 7 modulo this");
  worker->add_option("--work-us", role_work_us,
                     "microseconds of work per delivery before answering");
  worker
      ->add_option("--die-at", die_at,
                   "kill itself: none, batch, ack or delivery")
      ->check(CLI::IsMember({"none", "batch", "ack", "delivery"}));
  worker->add_option("--die-after", role.die_after,
                     "deliveries handled before --die-at applies");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? exit_ok : exit_usage;
  }
  // The TINYBROKER_* token and TLS variables apply to every connection;
  // checked (and the PEM files read) once here, so later ones cannot fail.
  try {
    tb::client::make_channel_credentials(tb::client::security_from_env());
  } catch (const tb::client::security_error& e) {
    std::fprintf(stderr, "tinybroker-soak: %s\n", e.what());
    return exit_usage;
  }

  if (!app.get_subcommands().empty()) {
    if (!is_loopback(role.server)) {
      std::fprintf(stderr, "tinybroker-soak: only loopback servers\n");
      return exit_usage;
    }
    install_stop_handler();
    role.duration = std::chrono::milliseconds(role_duration_ms);
    role.work = std::chrono::microseconds(role_work_us);
    if (publisher->parsed())
      return run_publisher(role);
    if (subscriber->parsed())
      return run_subscriber(role, false);
    if (dead->parsed())
      return run_subscriber(role, true);
    role.die_at = die_at == "batch"      ? die_point::batch
                  : die_at == "ack"      ? die_point::ack
                  : die_at == "delivery" ? die_point::delivery
                                         : die_point::none;
    return run_worker(role);
  }

  auto d = parse_duration(quick ? "1m" : duration);
  auto k = parse_duration(kill_every);
  auto t = parse_duration(drain);
  auto n = parse_duration(node_kill_every);
  if (!d || !k || !t || !n) {
    std::fprintf(stderr, "tinybroker-soak: --duration, --kill-every, "
                         "--node-kill-every and --drain-timeout take a "
                         "positive duration with a unit: 500ms, 90s, 10m, "
                         "1h\n");
    return exit_usage;
  }
  cfg.duration = *d;
  cfg.kill_every = *k;
  cfg.node_kill_every = *n;
  cfg.drain_timeout = *t;
  if (cfg.broker_binary.empty()) {
    auto self = self_path();
    cfg.broker_binary = self.substr(0, self.rfind('/') + 1) + "tinybroker";
  }
  if (!cfg.server.empty() && !is_loopback(cfg.server)) {
    std::fprintf(stderr, "tinybroker-soak: only loopback servers\n");
    return exit_usage;
  }
  if (!cfg.server.empty() && cfg.nodes > 1) {
    std::fprintf(stderr, "tinybroker-soak: --nodes 3 starts its own nodes: "
                         "leave out --server\n");
    return exit_usage;
  }
  if (cfg.replicas > 0 && cfg.nodes < 3) {
    std::fprintf(stderr, "tinybroker-soak: --replicas needs --nodes 3\n");
    return exit_usage;
  }
  if (!cfg.server.empty() && cfg.broker_pid <= 0) {
    std::fprintf(stderr, "tinybroker-soak: --server needs --broker-pid\n");
    return exit_usage;
  }
  soak_report report;
  auto code = run_soak(cfg, report);
  if (code == exit_usage && report.failures.empty())
    return code;
  print_report(cfg, report);
  return code;
}
