// Which actor scheduler a broker runs: the config's `scheduler` and
// `worker_threads` applied to CAF's configuration.

#pragma once

#include <cstddef>
#include <string>

#include <caf/actor_system_config.hpp>

namespace tb {

/// Selects the scheduler named `name` ("handoff", "sharing" or "stealing";
/// anything else is "handoff") with `worker_threads` workers (0: one per
/// core, at least 2) in `cfg`. "handoff" is tinybroker's own policy
/// (handoff_policy.hpp), run with a bound of `handoff_max_throughput`
/// messages per actor run; the other two are CAF's.
void use_scheduler(caf::actor_system_config& cfg, const std::string& name,
                   std::size_t worker_threads);

} // namespace tb
