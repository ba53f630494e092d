// Test helpers for actors under the handoff scheduler
// (actors/scheduler/handoff_policy.hpp): a system with two workers under a
// chosen scheduler, and a wait until both workers sleep, so that only a
// wake-up (or a caller_runs) makes an actor run.

#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/coordinator.hpp>

#include "actors/scheduler/handoff_policy.hpp"
#include "actors/scheduler/scheduler_choice.hpp"

namespace tb::test {

/// The scheduler of a system that runs the handoff policy.
using handoff_coordinator = caf::scheduler::coordinator<handoff_policy>;

/// Waits (up to 10 s) until both workers of `sys` sleep, so that only a
/// wake-up can make them take a job: a worker still starting up may take a
/// queued job before the caller does.
inline bool workers_asleep(caf::actor_system& sys) {
  auto* coordinator = dynamic_cast<handoff_coordinator*>(&sys.scheduler());
  if (coordinator == nullptr)
    return false;
  auto& data = coordinator->data();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> guard{data.lock};
      if (data.sleeping == 2)
        return true;
    }
    std::this_thread::yield();
  }
  return false;
}

/// A system with 2 workers under the scheduler `name`.
struct system_with {
  explicit system_with(const std::string& name) {
    use_scheduler(cfg, name, 2);
    sys = std::make_unique<caf::actor_system>(cfg);
  }
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
};

} // namespace tb::test
