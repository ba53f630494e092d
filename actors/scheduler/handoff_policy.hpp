// The broker's default actor scheduler policy, "handoff": CAF's work sharing
// (one queue for all workers) without the wake-ups a message between two
// actors costs there. CAF's `work_sharing` wakes a sleeping worker on every
// enqueue, so when session actor A sends a publish to session actor B, a
// second thread wakes (a futex wake and a context switch, often on the other
// core) to run B, although A's worker takes B itself a few microseconds
// later. Here an actor made runnable from inside a worker (an internal
// enqueue) wakes no one while at most two jobs are queued: the worker that
// made them runnable runs them next (a group actor sends two messages per
// publish: the delivery and the answer to the publisher). A third queued
// job, or a job from outside the scheduler (a gRPC thread, a timer), wakes
// a sleeper as before, so bursts still spread over all workers.
// docs/performance.md, "Latency at everyday rates", has the measurements.
//
// A worker keeps running one actor until its mailbox is empty unless
// `scheduler.max-throughput` bounds the messages per run; the broker sets a
// bound (`handoff_max_throughput`), so that a busy actor yields and the job
// queued behind it wakes the other worker.

#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

#include <caf/policy/unprofiled.hpp>
#include <caf/resumable.hpp>

namespace caf::scheduler {
class abstract_coordinator;
} // namespace caf::scheduler

namespace tb {

/// Messages an actor handles per run under the handoff policy before it
/// yields its worker to the next queued job.
constexpr std::size_t handoff_max_throughput = 64;

/// Jobs that may wait in the queue, made runnable by the thread that runs
/// them next, before an internal enqueue wakes a sleeping worker. An actor
/// that sends two messages (a group: the delivery to a member's session and
/// the answer to the publisher's) leaves two jobs that its thread runs in a
/// few microseconds, less than a wake-up costs.
constexpr std::size_t handoff_wake_backlog = 2;

/// True on a thread outside the scheduler that runs the jobs it enqueues
/// itself (actors/scheduler/caller_runs.hpp): its enqueues count as a
/// worker's own.
inline thread_local bool handoff_caller_runs = false;

/// A CAF scheduler policy: one job queue, and an internal enqueue into an
/// empty queue wakes no other worker (the enqueuing worker runs the job
/// next). Use as `caf::scheduler::coordinator<tb::handoff_policy>`.
class handoff_policy : public caf::policy::unprofiled {
public:
  /// The shared queue, and who sleeps on it.
  struct coordinator_data {
    /// Called by CAF's coordinator.
    explicit coordinator_data(caf::scheduler::abstract_coordinator*) {}

    /// Runnable jobs, oldest first.
    std::deque<caf::resumable*> queue;
    /// Guards everything here.
    std::mutex lock;
    /// Sleeping workers wait on it.
    std::condition_variable cv;
    /// Workers waiting on `cv`.
    std::size_t sleeping = 0;
    /// Wake-ups sent (for tests and profiles).
    std::uint64_t wakeups = 0;
    /// Enqueues that woke no one (for tests and profiles).
    std::uint64_t handoffs = 0;
  };

  /// Workers keep nothing of their own.
  struct worker_data {
    /// Called by CAF's worker.
    explicit worker_data(caf::scheduler::abstract_coordinator*) {}
  };

  /// Queues `job`; wakes a sleeper if `from_outside`, or if more than
  /// `backlog` jobs are queued then (the caller's thread runs them one after
  /// the other).
  template <class Coordinator>
  static void push(Coordinator* self, caf::resumable* job, bool from_outside,
                   std::size_t backlog = handoff_wake_backlog) {
    from_outside = from_outside && !handoff_caller_runs;
    auto& data = d(self);
    bool wake = false;
    {
      std::lock_guard<std::mutex> guard{data.lock};
      data.queue.push_back(job);
      wake = data.sleeping > 0 && (from_outside || data.queue.size() > backlog);
      if (wake)
        ++data.wakeups;
      else if (data.sleeping > 0)
        ++data.handoffs;
    }
    // Notified outside the lock: the woken worker does not block on it.
    if (wake)
      data.cv.notify_one();
  }

  /// Wakes a sleeper if jobs are queued (for a thread that ran some of the
  /// queue itself and leaves the rest).
  template <class Coordinator>
  static void wake_if_queued(Coordinator* self) {
    auto& data = d(self);
    bool wake = false;
    {
      std::lock_guard<std::mutex> guard{data.lock};
      wake = data.sleeping > 0 && !data.queue.empty();
      if (wake)
        ++data.wakeups;
    }
    if (wake)
      data.cv.notify_one();
  }

  /// Takes the oldest job without waiting; nullptr if there is none.
  template <class Coordinator>
  static caf::resumable* try_take(Coordinator* self) {
    auto& data = d(self);
    std::lock_guard<std::mutex> guard{data.lock};
    if (data.queue.empty())
      return nullptr;
    auto* job = data.queue.front();
    data.queue.pop_front();
    return job;
  }

  /// A job from outside the workers (a gRPC thread, the clock, spawn).
  template <class Coordinator>
  void central_enqueue(Coordinator* self, caf::resumable* job) {
    push(self, job, true);
  }

  /// A job a worker hands to another worker explicitly.
  template <class Worker>
  void external_enqueue(Worker* self, caf::resumable* job) {
    push(self->parent(), job, true);
  }

  /// A job made runnable by the actor that `self` runs.
  template <class Worker>
  void internal_enqueue(Worker* self, caf::resumable* job) {
    push(self->parent(), job, false);
  }

  /// A job that yielded after `max-throughput` messages: to the back. A
  /// busy actor shares the load: any other queued job wakes a sleeper.
  template <class Worker>
  void resume_job_later(Worker* self, caf::resumable* job) {
    push(self->parent(), job, false, 1);
  }

  /// Takes the oldest job, sleeping while there is none.
  template <class Worker>
  caf::resumable* dequeue(Worker* self) {
    auto& data = d(self->parent());
    std::unique_lock<std::mutex> guard{data.lock};
    while (data.queue.empty()) {
      ++data.sleeping;
      data.cv.wait(guard);
      --data.sleeping;
    }
    auto* job = data.queue.front();
    data.queue.pop_front();
    return job;
  }

  /// Workers hold no jobs of their own.
  template <class Worker, class UnaryFunction>
  void foreach_resumable(Worker*, UnaryFunction) {}

  /// Hands every queued job to `f` (at shutdown).
  template <class Coordinator, class UnaryFunction>
  void foreach_central_resumable(Coordinator* self, UnaryFunction f) {
    auto& data = d(self);
    std::unique_lock<std::mutex> guard{data.lock};
    while (!data.queue.empty()) {
      auto* job = data.queue.front();
      data.queue.pop_front();
      f(job);
    }
  }
};

} // namespace tb
