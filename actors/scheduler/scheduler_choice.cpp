#include "actors/scheduler/scheduler_choice.hpp"

#include <algorithm>
#include <thread>

#include <caf/atom.hpp>
#include <caf/scheduler/coordinator.hpp>

#include "actors/scheduler/handoff_policy.hpp"

namespace tb {

void use_scheduler(caf::actor_system_config& cfg, const std::string& name,
                   std::size_t worker_threads) {
  if (name == "stealing") {
    cfg.set("scheduler.policy", caf::atom("stealing"));
  } else if (name == "sharing") {
    cfg.set("scheduler.policy", caf::atom("sharing"));
  } else {
    // CAF runs a scheduler module loaded here instead of its own.
    cfg.module_factories.push_back(
        [](caf::actor_system& sys) -> caf::actor_system::module* {
          return new caf::scheduler::coordinator<handoff_policy>(sys);
        });
    cfg.set("scheduler.max-throughput", handoff_max_throughput);
  }
  auto threads =
      worker_threads != 0
          ? worker_threads
          : std::max<std::size_t>(2, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", threads);
}

} // namespace tb
