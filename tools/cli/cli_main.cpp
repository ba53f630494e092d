// tinybroker-cli: publish, subscribe, manage consumer groups and measure a
// tinybroker from the shell (docs/cli.md).

#include <iostream>

#include "tools/cli/commands.hpp"

int main(int argc, char** argv) {
  using namespace tb::cli;
  CLI::App app{"tinybroker-cli: publish, subscribe, manage consumer groups "
               "and measure a tinybroker from the shell.\n"
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
  commands.push_back(add_bench_command(app, opts));
  set_examples(app, "  tinybroker-cli pub orders.eu.created '{\"id\": 1}'\n"
                    "  tinybroker-cli sub 'orders.>'\n"
                    "  tinybroker-cli sub 'jobs.>' --group workers\n"
                    "  tinybroker-cli groups ls --json\n"
                    "  tinybroker-cli --server 10.0.0.5:7400 bench "
                    "--scenario queue\n"
                    "'tinybroker-cli COMMAND --help' describes each "
                    "command.\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
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
