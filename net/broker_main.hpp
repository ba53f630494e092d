// The broker program as a function, so that a program embedding tinybroker
// (for example one that registers its own group policies) runs the same
// command line, config loading and signal handling as `tinybroker`.

#pragma once

#include <string>

namespace tb {

/// Runs the broker from the command line `argc`/`argv` (`--config`,
/// `--listen`, `--metrics-listen`, `--log-level`, `--log-format`,
/// `--check-config`, `--version`, `--help`) until SIGTERM or SIGINT, naming
/// itself `program` in messages; returns the
/// process exit code (0 after a clean stop, 1 if the broker cannot start, 2
/// for a bad command line or config).
int run_broker(int argc, char** argv, const std::string& program);

} // namespace tb
