// tinybroker-bench: a load generator that measures a running broker. This
// file holds the command line and picks the scenario: fan-out S1, S2, S4
// and S5 (tools/bench_fanout.cpp), the acked work queue S3
// (tools/bench_queue.cpp), the memory readings idle and held
// (tools/bench_memory.cpp) and the routing scenarios topics-new,
// subscribe-*, expiry and topic-memory (tools/bench_routing.cpp,
// tools/bench_expiry.cpp) and the group timers (tools/bench_timers.cpp);
// the publishers are in tools/bench_publish.cpp.

#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "client/addresses.hpp"
#include "client/check.hpp"
#include "client/connection.hpp"
#include "client/grpc_log.hpp"
#include "client/reach.hpp"
#include "client/tls_diagnosis.hpp"
#include "tools/bench_cluster.hpp"
#include "tools/bench_options.hpp"
#include "tools/bench_report.hpp"
#include "tools/bench_routing.hpp"
#include "tools/security_flags.hpp"

namespace {

using namespace std::chrono_literals;
using tb::bench::exit_ok;
using tb::bench::exit_usage;
using tb::bench::explicit_flags;
using tb::bench::scenario_kind;

// Returns true if `argv` asks for JSON (`--json` anywhere), for errors
// found before the flags were stored.
bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string{argv[i]} == "--json")
      return true;
  return false;
}

} // namespace

int main(int argc, char** argv) {
  tb::client::route_grpc_log("tinybroker-bench");
  tb::bench::run_config cfg;
  explicit_flags given;
  CLI::App app{tb::bench::description_text()};
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version",
                       std::string{"tinybroker-bench "} + TINYBROKER_VERSION);
  cfg.server = tb::client::server_from_env();
  app.add_option("--server", cfg.server,
                 std::string{"broker address HOST:PORT, or several joined by "
                             "commas: the first that answers (env "} +
                     tb::client::server_env + "; default " +
                     tb::client::default_server + ")");
  app.add_option("--publish-server", cfg.publish_server,
                 "the broker address the publishers use (e.g. one node of a "
                 "cluster; default: --server's)")
      ->type_name("HOST:PORT");
  app.add_option("--subscribe-server", cfg.subscribe_server,
                 "the broker address the subscribers, workers and responders "
                 "use (e.g. another node; default: --server's); several, "
                 "A,B,C: fan-out subscribers spread over them round robin")
      ->type_name("HOST:PORT");
  app.add_option("--scenario", cfg.scenario, "the scenario")
      ->check(CLI::IsMember({"fanout",
                             "queue",
                             "s1",
                             "s2",
                             "s3",
                             "s4",
                             "s5",
                             "idle",
                             "held",
                             "topics-new",
                             "subscribe-rate",
                             "subscribe-one-topic",
                             "subscribe-wildcard",
                             "expiry",
                             "topic-memory",
                             "timers",
                             "delay",
                             "ttl",
                             "priority",
                             "request"}));
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
                     "orders.<i>.created on orders.*.created; s5: 1000); "
                     "routing scenarios: new topics to publish to")
          ->check(CLI::Range(1u, 1'000'000u));
  auto* subscribers = app.add_option("--subscribers", cfg.subscribers,
                                     "fanout: subscriber sessions (K; s2: 4)")
                          ->check(CLI::Range(0u, 256u));
  app.add_option("--workers", cfg.workers, "queue, timers: worker sessions (W)")
      ->check(CLI::Range(1u, 256u));
  app.add_option("--max-in-flight", cfg.max_in_flight,
                 "queue: each worker's max_in_flight (F)")
      ->check(CLI::Range(1u, 65536u));
  app.add_option("--max-seconds", cfg.max_seconds,
                 "give up after this many seconds (then exit 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--sessions", cfg.sessions, "idle: sessions to open")
      ->check(CLI::Range(1u, 100'000u));
  app.add_option("--subscribes", cfg.subscribes,
                 "subscribe-rate, subscribe-one-topic: subscribes to make")
      ->check(CLI::Range(uint64_t{1}, uint64_t{10'000'000}));
  app.add_option("--in-flight", cfg.in_flight,
                 "subscribe-rate, subscribe-one-topic: most unconfirmed "
                 "subscribes")
      ->check(CLI::Range(1u, 65536u));
  app.add_option("--per-frame", cfg.per_frame,
                 "subscribe-rate, subscribe-one-topic: subscriptions per "
                 "frame (more than 1: SubscribeBatch frames)")
      ->check(CLI::Range(1u, 4096u));
  app.add_option("--repeats", cfg.repeats,
                 "subscribe-wildcard: timed subscribes")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--window", cfg.window,
                 "expiry: seconds of probing after the publisher closed "
                 "(within --max-seconds)")
      ->check(CLI::PositiveNumber);
  app.add_option_function<std::string>(
         "--connections",
         [&cfg](const std::string& how) { cfg.own_connections = how == "own"; },
         "idle: shared (every session on one connection, the default) or "
         "own (each session on its own channel and TCP connection)")
      ->check(CLI::IsMember({"shared", "own"}))
      ->default_str("shared");
  app.add_option("--settle", cfg.settle_seconds,
                 "idle: also read the broker's memory this many seconds "
                 "after the last subscribe was confirmed, to tell garbage "
                 "the allocator gives back later from what the sessions "
                 "keep")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--broker-pid", cfg.broker_pid,
                 "the broker's process id: idle, held and topic-memory read "
                 "its memory (required), every scenario its CPU time")
      ->check(CLI::PositiveNumber);
  app.add_flag("--paced", cfg.paced,
               "also stay at most 64 frames ahead of the slowest subscriber "
               "(measures sustainable delivery without buffer overflow) or "
               "of the workers' acks");
  auto* msg_id_flag =
      app.add_flag("--msg-id", cfg.msg_ids,
                   "give every published message a unique msg_id (the broker "
                   "de-duplicates them, docs/semantics.md), numbered from one "
                   "msg_id_base per frame as the idempotent clients send them");
  app.add_flag("--msg-id-each", cfg.msg_id_each,
               "with --msg-id: write each message's msg_id into the message "
               "(as a user's own ids travel) instead of one base per frame")
      ->needs(msg_id_flag);
  app.add_flag("--json", cfg.json, "print one JSON object, not a table");
  tb::client::security_sources security_flags;
  tb::tools::add_security_flags(app, security_flags);
  app.footer(tb::bench::examples_text());
  // Errors are JSON with --json, also those found while parsing.
  tb::bench::set_json_errors(wants_json(argc, argv));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) // --help, --version
      return app.exit(e) == 0 ? exit_ok : exit_usage;
    tb::bench::error("INVALID_ARGUMENT",
                     std::string{e.what()} + "; see --help");
    return exit_usage;
  }
  given.messages = messages->count() > 0;
  given.subscribers = subscribers->count() > 0;
  given.rate = rate->count() > 0;
  given.topics = topics->count() > 0;
  auto problem = tb::bench::apply_preset(cfg, given);
  if (!problem.empty()) {
    tb::bench::error("INVALID_ARGUMENT", problem);
    return exit_usage;
  }

  std::unique_ptr<tb::client::connection> conn_ptr;
  tb::client::security_options security;
  try {
    security = tb::client::resolve_security(
        security_flags, tb::client::security_sources_from_env());
    // Issue 30: --server may name several brokers (a cluster's nodes,
    // `tinybroker-cli --server A,B bench`): the first that answers is
    // used. Each fails at once when nothing listens; a slow one is waited
    // for up to 5 s. Each stream names itself ("bench-worker-3"); other
    // calls say "tinybroker-bench".
    auto addresses = tb::client::split_addresses(cfg.server);
    auto found =
        tb::client::connect_any(addresses, security, "tinybroker-bench", 5s);
    if (!found.conn) {
      tb::bench::error("UNAVAILABLE", tb::client::describe_connect_failures(
                                          addresses, found.failures));
      return exit_usage;
    }
    conn_ptr = std::move(found.conn);
    cfg.server = found.address;
  } catch (const tb::client::security_error& e) {
    tb::bench::error("INVALID_ARGUMENT", e.what());
    return exit_usage;
  } catch (const tb::client::invalid_request& e) {
    tb::bench::error("INVALID_ARGUMENT", std::string{"--server: "} + e.what());
    return exit_usage;
  }
  auto& conn = *conn_ptr;
  // Issue 30: the publishers and the subscribers may use other brokers
  // (the nodes of a cluster) than --server, which sets up and reads stats.
  // Several --subscribe-server addresses spread the subscribers over them.
  std::vector<std::unique_ptr<tb::client::connection>> node_conns;
  if (auto problem = tb::bench::open_subscribe_nodes(cfg, security, node_conns);
      !problem.empty()) {
    tb::bench::error("UNAVAILABLE", problem);
    return exit_usage;
  }
  std::unique_ptr<tb::client::connection> role_conns[2];
  if (auto problem = tb::bench::open_role_servers(cfg, security, role_conns);
      !problem.text.empty()) {
    tb::bench::error(problem.code, problem.text);
    return exit_usage;
  }
  switch (cfg.kind) {
  case scenario_kind::queue:
    return tb::bench::run_queue(conn, cfg);
  case scenario_kind::idle:
    return tb::bench::run_idle(conn, cfg, security);
  case scenario_kind::held:
    return tb::bench::run_held(conn, cfg);
  case scenario_kind::topics_new:
    return tb::bench::run_topics_new(conn, cfg);
  case scenario_kind::subscribe_rate:
    return tb::bench::run_subscribe_rate(conn, cfg);
  case scenario_kind::subscribe_one_topic:
    return tb::bench::run_subscribe_one_topic(conn, cfg);
  case scenario_kind::subscribe_wildcard:
    return tb::bench::run_subscribe_wildcard(conn, cfg);
  case scenario_kind::expiry:
    return tb::bench::run_expiry(conn, cfg);
  case scenario_kind::topic_memory:
    return tb::bench::run_topic_memory(conn, cfg);
  case scenario_kind::timers:
    return tb::bench::run_timers(conn, cfg);
  case scenario_kind::schedule:
    return tb::bench::run_schedule(conn, cfg);
  case scenario_kind::request:
    return tb::bench::run_request(conn, cfg);
  case scenario_kind::fanout:
    break;
  }
  return tb::bench::run_fanout(conn, cfg);
}
