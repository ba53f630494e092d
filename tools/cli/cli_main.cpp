// tinybroker-cli: publish, subscribe, manage consumer groups, watch and
// measure a tinybroker from the shell (docs/cli.md).

#include <iostream>
#include <string>

#include "client/grpc_log.hpp"
#include "tools/cli/cli_common.hpp"

namespace {

// Returns what is wrong if parsing failed with `error` because a command
// that needs a subcommand got none or an unknown one, else "".
std::string missing_command(const CLI::App& app, const CLI::ParseError& error) {
  if (dynamic_cast<const CLI::RequiredError*>(&error) == nullptr)
    return {};
  const CLI::App* deepest = &app;
  for (auto subs = deepest->get_subcommands(); !subs.empty();
       subs = deepest->get_subcommands())
    deepest = subs.front();
  auto candidates = deepest->get_subcommands({});
  if (candidates.empty())
    return {};
  std::string names;
  for (auto* sub : candidates)
    names += (names.empty() ? "" : ", ") + sub->get_name();
  auto rest = deepest->remaining();
  if (rest.empty()) // with fallthrough, the top level collects what is left
    rest = app.remaining();
  if (rest.empty() || rest.front().rfind("-", 0) == 0)
    return "a command is needed: one of " + names;
  return "unknown command \"" + rest.front() + "\"; expected one of " + names;
}

// Returns true if `argv` asks for JSON output (`--json` anywhere), for
// errors found before the flags were stored.
bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string{argv[i]} == "--json")
      return true;
  return false;
}

// Prints the error `message` (standing for gRPC status `status`) on
// standard error: one JSON object with `json`, else one line with the
// program's prefix.
void print_error(bool json, const std::string& status,
                 const std::string& message) {
  std::cout.flush();
  if (json)
    std::cerr << tb::cli::json_error(status, message) << std::endl;
  else
    std::cerr << "tinybroker-cli: " << message << std::endl;
}

} // namespace

int main(int argc, char** argv) {
  using namespace tb::cli;
  tb::client::route_grpc_log("tinybroker-cli");
  CLI::App app{"tinybroker-cli: publish, subscribe, manage consumer groups, "
               "watch and measure a tinybroker from the shell.\n"
               "Exit codes: 0 ok, 1 refused by the broker, 2 usage error, "
               "3 broker unreachable or no answer within --timeout, 4 sub "
               "--idle-timeout passed before --count deliveries."};
  app.set_version_flag("--version",
                       std::string{"tinybroker-cli "} + TINYBROKER_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  connection_options opts;
  add_connection_flags(app, opts);
  std::vector<command> commands{add_pub_command(app, opts),
                                add_sub_command(app, opts)};
  for (auto& cmd : add_request_commands(app, opts))
    commands.push_back(std::move(cmd));
  for (auto& cmd : add_groups_commands(app, opts))
    commands.push_back(std::move(cmd));
  commands.push_back(add_stats_command(app, opts));
  commands.push_back(add_health_command(app, opts));
  commands.push_back(add_info_command(app, opts));
  commands.push_back(add_cluster_command(app, opts));
  commands.push_back(add_bench_command(app, opts));
  set_examples(app, "  tinybroker-cli pub orders.eu.created '{\"id\": 1}'\n"
                    "  tinybroker-cli sub 'orders.>'\n"
                    "  tinybroker-cli sub 'jobs.>' --group workers\n"
                    "  tinybroker-cli reply svc.time --command date &\n"
                    "  tinybroker-cli request svc.time now\n"
                    "  tinybroker-cli groups ls --json\n"
                    "  tinybroker-cli stats --watch\n"
                    "  tinybroker-cli health && tinybroker-cli info\n"
                    "  tinybroker-cli --server 10.0.0.5:7400 bench "
                    "--scenario queue\n"
                    "'tinybroker-cli COMMAND --help' describes each "
                    "command.\n");
  bool json = wants_json(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (auto problem = missing_command(app, e); !problem.empty()) {
      print_error(json, "INVALID_ARGUMENT", problem + "; see --help");
      return exit_usage;
    }
    if (e.get_exit_code() == 0) // --help, --version
      return app.exit(e) == 0 ? exit_ok : exit_usage;
    print_error(json, "INVALID_ARGUMENT",
                std::string{e.what()} + "; see --help");
    return exit_usage;
  }
  try {
    for (auto& cmd : commands)
      if (cmd.app->parsed())
        return cmd.run();
    print_error(json, "INVALID_ARGUMENT", "no command given; see --help");
    return exit_usage;
  } catch (const cli_failure& failure) {
    print_error(opts.json, failure.status(), failure.what());
    return failure.code();
  }
}
