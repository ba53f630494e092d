// tinybroker-cli: publish, subscribe, manage consumer groups, watch and
// measure a tinybroker from the shell (docs/cli.md).

#include <iostream>
#include <string>

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

} // namespace

int main(int argc, char** argv) {
  using namespace tb::cli;
  CLI::App app{"tinybroker-cli: publish, subscribe, manage consumer groups, "
               "watch and measure a tinybroker from the shell.\n"
               "Exit codes: 0 ok, 1 refused by the broker, 2 usage error, "
               "3 broker unreachable or no answer within --timeout."};
  app.require_subcommand(1);
  app.fallthrough();
  connection_options opts;
  add_connection_flags(app, opts);
  std::vector<command> commands{add_pub_command(app, opts),
                                add_sub_command(app, opts)};
  for (auto& cmd : add_groups_commands(app, opts))
    commands.push_back(std::move(cmd));
  commands.push_back(add_stats_command(app, opts));
  commands.push_back(add_bench_command(app, opts));
  set_examples(app, "  tinybroker-cli pub orders.eu.created '{\"id\": 1}'\n"
                    "  tinybroker-cli sub 'orders.>'\n"
                    "  tinybroker-cli sub 'jobs.>' --group workers\n"
                    "  tinybroker-cli groups ls --json\n"
                    "  tinybroker-cli stats --watch\n"
                    "  tinybroker-cli --server 10.0.0.5:7400 bench "
                    "--scenario queue\n"
                    "'tinybroker-cli COMMAND --help' describes each "
                    "command.\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (auto problem = missing_command(app, e); !problem.empty()) {
      std::cerr << "tinybroker-cli: " << problem << "; see --help\n";
      return exit_usage;
    }
    return app.exit(e) == 0 ? exit_ok : exit_usage;
  }
  try {
    for (auto& cmd : commands)
      if (cmd.app->parsed())
        return cmd.run();
    std::cerr << "tinybroker-cli: no command given; see --help\n";
    return exit_usage;
  } catch (const cli_failure& failure) {
    std::cout.flush();
    std::cerr << "tinybroker-cli: " << failure.what() << std::endl;
    return failure.code();
  }
}
