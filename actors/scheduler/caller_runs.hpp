// Lets a thread outside the actor scheduler run the actors it made runnable
// itself, instead of waking a worker thread for them. The gRPC thread that
// read a client frame hands it to the session actor; under the handoff
// scheduler it then runs that actor, and the actors it sends to (the
// subscribers' sessions, which start their gRPC writes), on the same thread.
// At everyday rates this removes a thread wake-up and a context switch per
// frame in each direction (docs/performance.md, "Latency at everyday
// rates"). Under load the queue holds more than one job and the workers wake
// as usual, so throughput still spreads over all workers.

#pragma once

#include <cstddef>

#include <caf/actor_system.hpp>

namespace tb {

/// For the lifetime of this object, jobs the current thread enqueues (by
/// sending to actors) wake no worker while they are the only ones queued;
/// the destructor then runs up to `max_jobs` queued jobs on this thread and
/// leaves the rest to the workers. Does nothing unless `sys` runs the
/// handoff scheduler. Declare it before taking locks that the actors' code
/// needs: it runs them when it goes out of scope, after those are released.
class caller_runs {
public:
  /// Jobs a caller runs by default: a publishing session and a few
  /// subscribers' sessions.
  static constexpr std::size_t default_max_jobs = 8;

  /// Starts deferring this thread's wake-ups (if `sys` is not null and runs
  /// the handoff scheduler).
  explicit caller_runs(caf::actor_system* sys,
                       std::size_t max_jobs = default_max_jobs);

  /// Stops deferring and runs the queued jobs.
  ~caller_runs();

  caller_runs(const caller_runs&) = delete;
  caller_runs& operator=(const caller_runs&) = delete;

  /// Runs up to `max_jobs` queued jobs of `sys`'s handoff scheduler on this
  /// thread and wakes a worker for any left; returns how many ran (0 under
  /// another scheduler).
  static std::size_t run_queued(caf::actor_system& sys, std::size_t max_jobs);

private:
  caf::actor_system* sys_;
  std::size_t max_jobs_;
  bool outer_; // false if nested in another caller_runs on this thread
};

} // namespace tb
