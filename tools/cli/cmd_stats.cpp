// `tinybroker-cli stats`: the broker's counters once (tables or --json),
// or as a live view refreshed every --interval (--watch).

#include <cerrno>
#include <csignal>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <unistd.h>

#include "tools/cli/cli_common.hpp"
#include "tools/cli/stats_view.hpp"

namespace tb::cli {

namespace {

namespace pb = tinybroker::v1;
using std::chrono::steady_clock;

// The shortest --interval: a shorter one would mostly measure the calls.
constexpr std::chrono::milliseconds min_interval{100};

// What `stats` was asked to show.
struct stats_options {
  bool members = false;
  std::optional<std::string> topics;
  std::optional<std::string> sessions;
  std::string groups;
  bool actors = false;
  uint32_t limit = 0;
  bool watch = false;
  std::chrono::milliseconds interval{1000};
  uint64_t count = 0;
};

// Returns the request that `opts` asks for.
pb::StatsRequest make_request(const stats_options& opts) {
  pb::StatsRequest request;
  if (opts.topics)
    request.set_topic_pattern(opts.topics->empty() ? ">" : *opts.topics);
  request.set_group_filter(opts.groups);
  request.set_session_filter(opts.sessions.value_or(""));
  request.set_limit(opts.limit);
  request.set_actors(opts.actors);
  return request;
}

// Returns the text view that `opts` asks for.
stats_view make_view(const stats_options& opts,
                     const client::connection& conn) {
  stats_view view;
  view.server = conn.address(); // of several: the one that answered
  view.members = opts.members;
  view.topics = opts.topics.has_value();
  view.sessions = opts.sessions.has_value();
  view.actors = opts.actors;
  view.watch = opts.watch;
  return view;
}

// Calls Stats; throws a `cli_failure` if it fails.
pb::StatsReply fetch(client::connection& conn, const pb::StatsRequest& request,
                     const connection_options& conn_opts) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + conn_opts.timeout);
  pb::StatsReply reply;
  check_status(conn.stub().Stats(&ctx, request, &reply), "Stats");
  return reply;
}

// Returns " (HH:MM:SS, every INTERVAL; Ctrl-C quits)" for a watch title.
std::string watch_note(std::chrono::milliseconds interval) {
  auto now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char clock[16];
  std::strftime(clock, sizeof clock, "%H:%M:%S", &local);
  return std::string{" ("} + clock + ", every " +
         format_duration(static_cast<uint64_t>(interval.count())) +
         "; Ctrl-C quits)";
}

// Runs `stats` without --watch.
int run_once(const stats_options& opts, const connection_options& conn_opts) {
  auto conn = connect(conn_opts);
  auto reply = fetch(*conn, make_request(opts), conn_opts);
  if (conn_opts.json)
    std::cout << stats_json(reply) << '\n';
  else
    print_stats(std::cout, reply, make_view(opts, *conn));
  return exit_ok;
}

// Runs `stats --watch`: one block (or JSON object) per refresh, until
// --count refreshes were shown, Ctrl-C, or a failed call.
int run_watch(const stats_options& opts, const connection_options& conn_opts) {
  stop_signals stop; // before connect(): gRPC's threads inherit the mask
  auto conn = connect_unless_stopped(conn_opts, stop);
  if (!conn)
    return exit_ok; // Ctrl-C while waiting for an absent broker
  auto request = make_request(opts);
  auto view = make_view(opts, *conn);
  bool terminal = !conn_opts.json && isatty(STDOUT_FILENO) == 1;
  std::optional<stats_sample> previous;
  auto next = steady_clock::now();
  for (uint64_t shown = 0; opts.count == 0 || shown < opts.count; ++shown) {
    if (stop.wait_until(next))
      return exit_ok;
    next = steady_clock::now() + opts.interval;
    stats_sample sample;
    try {
      sample.reply = fetch(*conn, request, conn_opts);
    } catch (const cli_failure&) {
      if (stop.pending())
        return exit_ok;
      throw;
    }
    sample.at = steady_clock::now();
    if (conn_opts.json) {
      std::cout << stats_json(sample.reply) << std::endl;
      previous = std::move(sample);
      continue;
    }
    std::optional<broker_rates> rates;
    if (previous) {
      rates = rates_between(*previous, sample);
      fill_missing_group_rates(*previous, sample);
    }
    view.title_note = watch_note(opts.interval);
    std::ostringstream block;
    print_stats(block, sample.reply, view, rates);
    // A terminal shows the latest block in place; a pipe gets them all,
    // a blank line apart.
    if (terminal)
      std::cout << "\x1b[H\x1b[2J";
    else if (shown != 0)
      std::cout << '\n';
    std::cout << block.str() << std::flush;
    previous = std::move(sample);
  }
  return exit_ok;
}

} // namespace

command add_stats_command(CLI::App& app, const connection_options& conn_opts) {
  auto opts = std::make_shared<stats_options>();
  auto* cmd = app.add_subcommand(
      "stats", "Show the broker's counters: totals, delivery latency and "
               "groups; members, topics, sessions and actors when asked. "
               "--watch refreshes them with rates, the group backing up "
               "most first.");
  cmd->add_flag("-m,--members", opts->members,
                "also list the members of each group");
  cmd->add_option_function<std::string>(
         "--topics", [opts](const std::string& v) { opts->topics = v; },
         "also list the topics matching PATTERN (all without one)")
      ->type_name("[PATTERN]")
      ->expected(0, 1)
      ->default_str("");
  cmd->add_option_function<std::string>(
         "--sessions", [opts](const std::string& v) { opts->sessions = v; },
         "also list the sessions whose peer address contains FILTER (all "
         "without one)")
      ->type_name("[FILTER]")
      ->expected(0, 1)
      ->default_str("");
  cmd->add_option("--groups", opts->groups,
                  "list only the groups whose name contains FILTER")
      ->type_name("FILTER");
  cmd->add_flag("--actors", opts->actors,
                "also list the broker's actors with their mailbox sizes");
  cmd->add_option("--limit", opts->limit,
                  "most entries of each list (default 100)")
      ->check(CLI::Range(1, 10000));
  auto* watch = cmd->add_flag(
      "-w,--watch", opts->watch,
      "refresh every --interval until Ctrl-C, with rates per second");
  cmd->add_option_function<std::string>(
         "-i,--interval",
         [opts](const std::string& text) {
           opts->interval = parse_duration_flag("--interval", text);
           if (opts->interval < min_interval)
             throw CLI::ValidationError("--interval", "must be at least 100ms");
         },
         "with --watch: time between refreshes, e.g. 500ms, 2s (default 1s)")
      ->type_name("DURATION")
      ->needs(watch);
  cmd->add_option("-n,--count", opts->count,
                  "with --watch: stop after N refreshes")
      ->check(CLI::PositiveNumber)
      ->needs(watch);
  set_examples(*cmd, "  tinybroker-cli stats\n"
                     "  tinybroker-cli stats --members --groups work\n"
                     "  tinybroker-cli stats --topics 'orders.>' --sessions\n"
                     "  tinybroker-cli stats --watch --interval 2s\n"
                     "  tinybroker-cli stats --json | jq .broker.published\n");
  return {cmd, [opts, &conn_opts] {
            return opts->watch ? run_watch(*opts, conn_opts)
                               : run_once(*opts, conn_opts);
          }};
}

} // namespace tb::cli
