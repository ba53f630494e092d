// tinybroker-bench: a load generator that measures a running broker. This
// file holds the command line and picks the scenario: fan-out S1, S2, S4
// and S5 (tools/bench_fanout.cpp), the acked work queue S3
// (tools/bench_queue.cpp) and the memory readings idle and held
// (tools/bench_memory.cpp); the publishers are in tools/bench_publish.cpp.

#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "net/client.hpp"
#include "tools/bench_report.hpp"
#include "tools/security_flags.hpp"

namespace {

using namespace std::chrono_literals;
using tb::bench::exit_ok;
using tb::bench::exit_usage;
using tb::bench::scenario_kind;

// What the command line gave explicitly, so presets fill only the rest.
struct explicit_flags {
  bool messages = false;
  bool subscribers = false;
  bool rate = false;
  bool topics = false;
};

// Fills in the preset of cfg.scenario; returns an error message or "".
std::string apply_preset(tb::bench::run_config& cfg,
                         const explicit_flags& given) {
  const auto& name = cfg.scenario;
  cfg.kind = scenario_kind::fanout;
  if (name == "queue" || name == "s3")
    cfg.kind = scenario_kind::queue;
  else if (name == "idle")
    cfg.kind = scenario_kind::idle;
  else if (name == "held")
    cfg.kind = scenario_kind::held;
  if (name == "s2" && !given.subscribers)
    cfg.subscribers = 4;
  if (name == "s4") {
    if (!given.rate)
      cfg.rate = 5000;
    if (!given.messages)
      cfg.messages = static_cast<uint64_t>(cfg.rate * 10);
  }
  if (name == "s5" && !given.topics)
    cfg.topics = 1000;
  if (cfg.kind == scenario_kind::queue && cfg.size < 16)
    return "--scenario " + name +
           " needs --size of at least 16 (send time and sequence number)";
  if (cfg.publishers > 1 && cfg.size < 16)
    return "--publishers above 1 needs --size of at least 16 (the sequence "
           "number tells each publisher's order)";
  if (cfg.publishers > cfg.messages)
    return "--publishers must not exceed --messages";
  bool reads_memory =
      cfg.kind == scenario_kind::idle || cfg.kind == scenario_kind::held;
  if (reads_memory && cfg.broker_pid <= 0)
    return "--scenario " + name +
           " needs --broker-pid (the broker's process id on this host)";
  if (cfg.rate > 0 && cfg.messages / cfg.rate > cfg.max_seconds)
    return "--messages at --rate take longer than --max-seconds";
  return "";
}

} // namespace

int main(int argc, char** argv) {
  tb::bench::run_config cfg;
  explicit_flags given;
  CLI::App app{
      "tinybroker-bench: measures a running tinybroker. P publisher "
      "sessions (default 1) publish N messages to bench.<run id>.t (or "
      "spread over T topics orders.<i>.created) in frames of B, each at most "
      "64 frames unconfirmed, as fast as possible or at --rate; reports "
      "throughput and end-to-end latency.\n"
      "Scenario fanout (s1; s2 = 4 subscribers): K subscriber sessions "
      "subscribe to bench.<run id>.>.\n"
      "Scenario queue (s3): W worker sessions join a fresh group "
      "bench-<run id>, each acking every Deliveries frame with one Ack "
      "frame; checks each message arrived exactly once in total.\n"
      "Scenario s4: fan-out at --rate (default 5000 msgs/s, 10 s of "
      "messages); latency counts from each message's scheduled send time.\n"
      "Scenario s5: fan-out over --topics (default 1000) topics "
      "orders.<i>.created to a subscriber on orders.*.created.\n"
      "Scenario idle: opens --sessions sessions with one subscription each "
      "and reports the broker's resident memory per session.\n"
      "Scenario held: publishes N messages to a fresh group without "
      "members and reports the broker's resident memory per held message.\n"
      "Exit code: 0 all delivered, 1 messages lost, duplicated or timed "
      "out, 2 usage or connection error."};
  app.option_defaults()->always_capture_default();
  app.add_option("--server", cfg.server, "broker address HOST:PORT")
      ->required();
  app.add_option("--scenario", cfg.scenario, "the scenario")
      ->check(CLI::IsMember(
          {"fanout", "queue", "s1", "s2", "s3", "s4", "s5", "idle", "held"}));
  auto* messages =
      app.add_option("--messages", cfg.messages,
                     "messages to publish in total (N; s4: rate x 10)")
          ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000}));
  app.add_option("--size", cfg.size,
                 "payload bytes per message, at least 8 (the send time; "
                 "queue: at least 16, the sequence number follows)")
      ->check(CLI::Range(std::size_t{8}, std::size_t{16} << 20));
  app.add_option("--batch", cfg.batch, "messages per publish frame (B)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{65536}));
  app.add_option("--publishers", cfg.publishers,
                 "publisher sessions (P), each on its own stream and thread "
                 "with its share of N")
      ->check(CLI::Range(1u, 256u));
  auto* rate = app.add_option("--rate", cfg.rate,
                              "messages per second over all publishers, 0 = "
                              "as fast as possible (s4: 5000)")
                   ->check(CLI::Range(0.0, 1e8));
  auto* topics =
      app.add_option("--topics", cfg.topics,
                     "topics to spread messages over (T; above 1: "
                     "orders.<i>.created on orders.*.created; s5: 1000)")
          ->check(CLI::Range(1u, 1'000'000u));
  auto* subscribers = app.add_option("--subscribers", cfg.subscribers,
                                     "fanout: subscriber sessions (K; s2: 4)")
                          ->check(CLI::Range(0u, 256u));
  app.add_option("--workers", cfg.workers, "queue: worker sessions (W)")
      ->check(CLI::Range(1u, 256u));
  app.add_option("--max-in-flight", cfg.max_in_flight,
                 "queue: each worker's max_in_flight (F)")
      ->check(CLI::Range(1u, 65536u));
  app.add_option("--max-seconds", cfg.max_seconds,
                 "give up after this many seconds (then exit 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--sessions", cfg.sessions, "idle: sessions to open")
      ->check(CLI::Range(1u, 100'000u));
  app.add_option("--broker-pid", cfg.broker_pid,
                 "idle, held: the broker's process id, whose memory is read")
      ->check(CLI::PositiveNumber);
  app.add_flag("--paced", cfg.paced,
               "also stay at most 64 frames ahead of the slowest subscriber "
               "(measures sustainable delivery without buffer overflow) or "
               "of the workers' acks");
  app.add_flag("--json", cfg.json, "print one JSON object, not a table");
  tb::client::security_sources security_flags;
  tb::tools::add_security_flags(app, security_flags);
  app.footer(
      "Examples (1,000,000 x 128 B, batch 256):\n"
      "  S1: tinybroker-bench --server 127.0.0.1:7400 --scenario s1 "
      "--paced\n"
      "  S2: tinybroker-bench --server 127.0.0.1:7400 --scenario s2 "
      "--paced\n"
      "  S3: tinybroker-bench --server 127.0.0.1:7400 --scenario s3\n"
      "  S3 with auth: TINYBROKER_TOKEN_FILE=bench.token tinybroker-bench "
      "--server 127.0.0.1:7400 --scenario s3\n"
      "  S4: tinybroker-bench --server 127.0.0.1:7400 --scenario s4 "
      "--rate 50000\n"
      "  S5: tinybroker-bench --server 127.0.0.1:7400 --scenario s5 "
      "--paced\n"
      "  idle: tinybroker-bench --server 127.0.0.1:7400 --scenario "
      "idle --broker-pid $(pidof tinybroker)\n"
      "  held: tinybroker-bench --server 127.0.0.1:7400 --scenario "
      "held --broker-pid $(pidof tinybroker)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? exit_ok : exit_usage;
  }
  given.messages = messages->count() > 0;
  given.subscribers = subscribers->count() > 0;
  given.rate = rate->count() > 0;
  given.topics = topics->count() > 0;
  auto problem = apply_preset(cfg, given);
  if (!problem.empty()) {
    std::fprintf(stderr, "tinybroker-bench: %s\n", problem.c_str());
    return exit_usage;
  }

  std::unique_ptr<tb::client::connection> conn_ptr;
  try {
    auto security = tb::client::resolve_security(
        security_flags, tb::client::security_sources_from_env());
    conn_ptr = std::make_unique<tb::client::connection>(cfg.server, security);
  } catch (const tb::client::security_error& e) {
    std::fprintf(stderr, "tinybroker-bench: %s\n", e.what());
    return exit_usage;
  }
  auto& conn = *conn_ptr;
  if (!conn.wait_connected(5s)) {
    std::fprintf(stderr, "tinybroker-bench: cannot connect to %s\n",
                 cfg.server.c_str());
    return exit_usage;
  }
  switch (cfg.kind) {
  case scenario_kind::queue:
    return tb::bench::run_queue(conn, cfg);
  case scenario_kind::idle:
    return tb::bench::run_idle(conn, cfg);
  case scenario_kind::held:
    return tb::bench::run_held(conn, cfg);
  case scenario_kind::fanout:
    break;
  }
  return tb::bench::run_fanout(conn, cfg);
}
