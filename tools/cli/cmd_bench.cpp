// `tinybroker-cli bench`: runs the load generator, tinybroker-bench, from
// the directory of this program, with the remaining arguments.

#include <cerrno>
#include <climits>
#include <cstring>
#include <iostream>
#include <memory>

#include <unistd.h>

#include "tools/cli/cli_common.hpp"

namespace tb::cli {

namespace {

// Returns the directory this program was started from (/proc/self/exe).
std::string own_directory() {
  char buf[PATH_MAX];
  auto n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    throw cli_failure(exit_refused, "cannot read /proc/self/exe: " +
                                        std::string{std::strerror(errno)});
  std::string path{buf, static_cast<std::size_t>(n)};
  return path.substr(0, path.rfind('/'));
}

// Returns true if `args` set the server themselves.
bool names_server(const std::vector<std::string>& args) {
  for (auto& arg : args)
    if (arg == "--server" || arg.rfind("--server=", 0) == 0)
      return true;
  return false;
}

// Sets (or, when empty, unsets) the environment variable `name`.
void export_var(const char* name, const std::string& value) {
  if (value.empty())
    unsetenv(name);
  else
    setenv(name, value.c_str(), 1);
}

// Hands the security settings to tinybroker-bench through its environment
// variables, so the token never shows in its command line.
void export_security(const client::security_options& security) {
  export_var(client::token_env, security.token);
  export_var(client::token_file_env, "");
  export_var(client::ca_env, security.ca_file);
  export_var(client::cert_env, security.cert_file);
  export_var(client::key_env, security.key_file);
  export_var(client::server_name_env, security.server_name);
}

// Replaces this process with tinybroker-bench; returns only on failure.
int run_bench(std::vector<std::string> args, const connection_options& opts) {
  auto binary = own_directory() + "/tinybroker-bench";
  export_security(resolve_security(opts));
  bool help = false;
  for (auto& arg : args)
    help = help || arg == "--help" || arg == "-h";
  if (help)
    std::cout << "tinybroker-cli bench [ARGS...] runs " << binary
              << " with ARGS,\nadding --server " << opts.server
              << " unless ARGS name one.\n"
              << "Example: tinybroker-cli bench --scenario queue --messages "
                 "100000 --workers 2\n\n"
              << std::flush;
  else if (!names_server(args))
    args.insert(args.begin(), {"--server", opts.server});
  std::vector<char*> argv{binary.data()};
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  execv(binary.c_str(), argv.data());
  throw cli_failure(exit_refused, "cannot run " + binary + ": " +
                                      std::strerror(errno) +
                                      " (it is installed next to "
                                      "tinybroker-cli)");
}

} // namespace

command add_bench_command(CLI::App& app, const connection_options& opts) {
  auto* cmd = app.add_subcommand(
      "bench", "Measure the broker: runs tinybroker-bench (installed next to "
               "this program) with the remaining arguments; "
               "'tinybroker-cli bench --help' lists them.");
  // Everything after `bench`, --help included, belongs to tinybroker-bench.
  cmd->prefix_command();
  cmd->fallthrough(false);
  cmd->set_help_flag();
  return {cmd, [cmd, &opts] {
            return run_bench(cmd->remaining(), opts);
          }};
}

} // namespace tb::cli
