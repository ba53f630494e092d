#include "actors/scheduler/caller_runs.hpp"

#include <caf/execution_unit.hpp>
#include <caf/scheduler/coordinator.hpp>

#include "actors/scheduler/handoff_policy.hpp"

namespace tb {

namespace {

using handoff_coordinator = caf::scheduler::coordinator<handoff_policy>;

// The execution unit of a thread that runs queued jobs without being a
// worker: what a job sends to an idle actor is queued as a worker's would
// be (the same thread may take it next).
class caller_unit final : public caf::execution_unit {
public:
  caller_unit(caf::actor_system* sys, handoff_coordinator* coordinator)
      : caf::execution_unit(sys), coordinator_(coordinator) {}

  void exec_later(caf::resumable* job) override {
    handoff_policy::push(coordinator_, job, false);
  }

private:
  handoff_coordinator* coordinator_;
};

// The handoff coordinator of `sys`, or nullptr under another scheduler.
handoff_coordinator* handoff_of(caf::actor_system& sys) {
  return dynamic_cast<handoff_coordinator*>(&sys.scheduler());
}

} // namespace

caller_runs::caller_runs(caf::actor_system* sys, std::size_t max_jobs)
    : sys_(sys != nullptr && handoff_of(*sys) != nullptr ? sys : nullptr),
      max_jobs_(max_jobs), outer_(!handoff_caller_runs) {
  if (sys_ != nullptr)
    handoff_caller_runs = true;
}

caller_runs::~caller_runs() {
  if (sys_ == nullptr || !outer_)
    return;
  handoff_caller_runs = false;
  run_queued(*sys_, max_jobs_);
}

std::size_t caller_runs::run_queued(caf::actor_system& sys,
                                    std::size_t max_jobs) {
  auto* coordinator = handoff_of(sys);
  if (coordinator == nullptr)
    return 0;
  // Made per call: a unit kept per thread could outlive its system, and a
  // new system may sit at the same address.
  caller_unit unit{&sys, coordinator};
  std::size_t ran = 0;
  while (ran < max_jobs) {
    auto* job = handoff_policy::try_take(coordinator);
    if (job == nullptr)
      return ran;
    ++ran;
    switch (job->resume(&unit, handoff_max_throughput)) {
    case caf::resumable::resume_later:
      // A busy actor, as a worker's resume_job_later: any other queued job
      // wakes a sleeper.
      handoff_policy::push(coordinator, job, false, 1);
      break;
    case caf::resumable::done:
    case caf::resumable::awaiting_message:
      // As CAF's workers do: the queue's reference goes with the job.
      intrusive_ptr_release(job);
      break;
    case caf::resumable::shutdown_execution_unit:
      // A worker's shutdown token: not this thread's to act on. The
      // coordinator sends another until each worker has stopped.
      handoff_policy::wake_if_queued(coordinator);
      return ran;
    }
  }
  handoff_policy::wake_if_queued(coordinator);
  return ran;
}

} // namespace tb
