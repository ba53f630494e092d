// tinybroker-bench's command line: the scenarios' presets and the help
// text (tools/tinybroker_bench.cpp defines the flags).

#pragma once

#include <string>

#include "tools/bench_config.hpp"

namespace tb::bench {

/// What the command line gave explicitly, so presets fill only the rest.
struct explicit_flags {
  /// --messages was given.
  bool messages = false;
  /// --subscribers was given.
  bool subscribers = false;
  /// --rate was given.
  bool rate = false;
  /// --topics was given.
  bool topics = false;
};

/// Fills in the preset of cfg.scenario (its kind, and the counts the
/// command line left out); returns an error message or "".
std::string apply_preset(run_config& cfg, const explicit_flags& given);

/// Returns the help text before the flags: what each scenario does.
std::string description_text();

/// Returns the help text after the flags: an example per scenario.
std::string examples_text();

} // namespace tb::bench
