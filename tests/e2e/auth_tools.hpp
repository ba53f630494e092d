// Running the real tinybroker-cli, tinybroker-bench and the Python example
// against the stand-in broker (tests/client/fake_broker.hpp) with a chosen
// environment: none of the TINYBROKER_* security variables of the test's
// own environment leak into them.

#pragma once

#include <string>
#include <utility>
#include <vector>

#include "../client/fake_broker.hpp"
#include "broker_process.hpp"

namespace tb::test {

/// The secret the stand-in brokers of these tests want.
inline const std::string good_token = "s3cret-token";

/// What the stand-in broker receives with `good_token`.
inline const std::string good_bearer = "Bearer " + good_token;

/// Returns `/usr/bin/env` arguments that clear the TINYBROKER_* security
/// variables, then set `env` ("NAME=VALUE" each), then run `binary`.
inline std::vector<std::string> clean_env(const std::vector<std::string>& env,
                                          const std::string& binary) {
  std::vector<std::string> argv;
  for (auto* name :
       {"TINYBROKER_TOKEN", "TINYBROKER_TOKEN_FILE", "TINYBROKER_CA",
        "TINYBROKER_CERT", "TINYBROKER_KEY", "TINYBROKER_TLS_SERVER_NAME"})
    argv.insert(argv.end(), {"-u", name});
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(binary);
  return argv;
}

/// Runs `binary` with `args` in the environment `env` (see `clean_env`);
/// returns its exit code and output.
inline std::pair<int, std::string>
run_with_env(const std::string& binary, const std::vector<std::string>& env,
             const std::vector<std::string>& args) {
  auto argv = clean_env(env, binary);
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command("/usr/bin/env", argv);
}

/// Runs tinybroker-cli with `args` (after `--server address`) in the
/// environment `env`.
inline std::pair<int, std::string> run_cli(const std::string& address,
                                           const std::vector<std::string>& env,
                                           std::vector<std::string> args) {
  args.insert(args.begin(), {"--server", address});
  return run_with_env(std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-cli",
                      env, args);
}

/// Returns how many of `broker`'s calls whose method ends with `method`
/// carried `authorization` (and, in `total`, how many there were).
inline int calls_with(const fake_broker& broker, const std::string& method,
                      const std::string& authorization, int* total = nullptr) {
  int with = 0, all = 0;
  for (auto& call : broker.calls()) {
    if (call.method.size() < method.size() ||
        call.method.compare(call.method.size() - method.size(), method.size(),
                            method) != 0)
      continue;
    ++all;
    with += call.authorization == authorization;
  }
  if (total != nullptr)
    *total = all;
  return with;
}

/// Returns a plain stand-in broker's settings that want `good_token`.
inline fake_broker_options wanting_token() {
  fake_broker_options options;
  options.token = good_token;
  return options;
}

} // namespace tb::test
