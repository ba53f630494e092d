// The subcommands of tinybroker-cli; each adds itself to the top-level app
// and returns what runs it (tools/cli/cmd_*.cpp).

#pragma once

#include <vector>

#include "tools/cli/cli_common.hpp"

namespace tb::cli {

/// Adds `pub`: publish messages with confirm and print their ids.
command add_pub_command(CLI::App& app, const connection_options& opts);

/// Adds `sub`: subscribe (fan-out or as a group member) and print
/// deliveries.
command add_sub_command(CLI::App& app, const connection_options& opts);

/// Adds `groups` with `ls`, `create` and `delete`.
std::vector<command> add_groups_commands(CLI::App& app,
                                         const connection_options& opts);

/// Adds `bench`: runs tinybroker-bench from the same directory.
command add_bench_command(CLI::App& app, const connection_options& opts);

} // namespace tb::cli
