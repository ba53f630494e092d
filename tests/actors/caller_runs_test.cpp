// caller_runs (actors/scheduler/caller_runs.hpp): a thread outside the
// scheduler runs the actors it made runnable, under the handoff scheduler
// only, and leaves what exceeds its budget to the workers. Real threads;
// actors report the thread they ran on through futures (no sleeps).

#include "actors/scheduler/caller_runs.hpp"

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduler/coordinator.hpp>
#include <gtest/gtest.h>

#include "actors/scheduler/handoff_policy.hpp"
#include "tests/support/handoff_system.hpp"

namespace tb {
namespace {

using namespace std::chrono_literals;
using test::handoff_coordinator;
using test::system_with;
using test::workers_asleep;

// The threads actors ran on, in the order they ran.
struct thread_log {
  std::mutex mutex;
  std::vector<std::thread::id> ids;
  std::promise<void> all_in;
  std::size_t expected = 1;

  void add() {
    std::lock_guard<std::mutex> guard{mutex};
    ids.push_back(std::this_thread::get_id());
    if (ids.size() == expected)
      all_in.set_value();
  }
};

// Logs its thread for each int, and passes the int on to `next` (if any)
// while it is above zero.
caf::behavior log_and_pass(caf::event_based_actor* self,
                           std::shared_ptr<thread_log> log, caf::actor next) {
  return {[self, log, next](int hops) {
    log->add();
    if (next && hops > 0)
      self->send(next, hops - 1);
  }};
}

// Spawns a logging actor that starts only with its first message, so that
// this message makes it runnable (an enqueue into the scheduler).
caf::actor spawn_logger(caf::actor_system& sys, std::shared_ptr<thread_log> log,
                        caf::actor next = {}) {
  return sys.spawn<caf::lazy_init>(log_and_pass, std::move(log),
                                   std::move(next));
}

TEST(CallerRuns, TheCallerRunsTheActorItSentToAndTheActorsThatOneSendsTo) {
  system_with s{"handoff"};
  auto log = std::make_shared<thread_log>();
  log->expected = 2;
  auto second = spawn_logger(*s.sys, log);
  auto first = spawn_logger(*s.sys, log, second);
  ASSERT_TRUE(workers_asleep(*s.sys));
  {
    caller_runs runner{s.sys.get()};
    caf::anon_send(first, 1);
  } // runs `first`, then `second`, here
  ASSERT_EQ(log->all_in.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(log->ids,
            (std::vector<std::thread::id>{std::this_thread::get_id(),
                                          std::this_thread::get_id()}));
  caf::anon_send_exit(first, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(second, caf::exit_reason::user_shutdown);
}

// Logs its thread, then sends its int to both `left` and `right`, as a
// group sends a delivery to a member and its answer to the publisher.
caf::behavior log_and_fork(caf::event_based_actor* self,
                           std::shared_ptr<thread_log> log, caf::actor left,
                           caf::actor right) {
  return {[self, log, left, right](int hops) {
    log->add();
    self->send(left, hops);
    self->send(right, hops);
  }};
}

// The wake-ups the handoff scheduler of `sys` has sent.
std::uint64_t wakeups(caf::actor_system& sys) {
  auto& data = dynamic_cast<handoff_coordinator&>(sys.scheduler()).data();
  std::lock_guard<std::mutex> guard{data.lock};
  return data.wakeups;
}

TEST(CallerRuns, AnActorSendingTwoMessagesWakesNoWorker) {
  system_with s{"handoff"};
  auto log = std::make_shared<thread_log>();
  log->expected = 3;
  auto left = spawn_logger(*s.sys, log);
  auto right = spawn_logger(*s.sys, log);
  auto fork = s.sys->spawn<caf::lazy_init>(log_and_fork, log, left, right);
  ASSERT_TRUE(workers_asleep(*s.sys));
  auto before = wakeups(*s.sys);
  {
    caller_runs runner{s.sys.get()};
    caf::anon_send(fork, 0);
  } // runs `fork`, then `left` and `right`, here
  ASSERT_EQ(log->all_in.get_future().wait_for(10s), std::future_status::ready);
  auto here = std::this_thread::get_id();
  EXPECT_EQ(log->ids, (std::vector<std::thread::id>{here, here, here}));
  EXPECT_EQ(wakeups(*s.sys), before);
  for (auto& actor : {fork, left, right})
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
}

TEST(CallerRuns, WithoutItAWorkerRunsTheActor) {
  system_with s{"handoff"};
  auto log = std::make_shared<thread_log>();
  auto actor = spawn_logger(*s.sys, log);
  caf::anon_send(actor, 0);
  ASSERT_EQ(log->all_in.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_NE(log->ids.at(0), std::this_thread::get_id());
  caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
}

TEST(CallerRuns, UnderCafsSchedulersItChangesNothing) {
  for (const char* name : {"sharing", "stealing"}) {
    system_with s{name};
    auto log = std::make_shared<thread_log>();
    auto actor = spawn_logger(*s.sys, log);
    {
      caller_runs runner{s.sys.get()};
      caf::anon_send(actor, 0);
    }
    ASSERT_EQ(log->all_in.get_future().wait_for(10s), std::future_status::ready)
        << name;
    EXPECT_NE(log->ids.at(0), std::this_thread::get_id()) << name;
    EXPECT_EQ(caller_runs::run_queued(*s.sys, 8), 0u) << name;
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  }
}

TEST(CallerRuns, JobsBeyondTheBudgetGoToTheWorkers) {
  system_with s{"handoff"};
  auto log = std::make_shared<thread_log>();
  constexpr std::size_t actors = 6;
  log->expected = actors;
  std::vector<caf::actor> loggers;
  for (std::size_t i = 0; i < actors; ++i)
    loggers.push_back(spawn_logger(*s.sys, log));
  {
    caller_runs runner{s.sys.get(), 2};
    for (auto& actor : loggers)
      caf::anon_send(actor, 0);
  }
  // Every actor ran, none waits for another caller; this thread ran at
  // most its budget of them.
  ASSERT_EQ(log->all_in.get_future().wait_for(10s), std::future_status::ready);
  std::size_t here = 0;
  {
    std::lock_guard<std::mutex> guard{log->mutex};
    for (auto id : log->ids)
      here += id == std::this_thread::get_id() ? 1 : 0;
  }
  EXPECT_LE(here, 2u);
  for (auto& actor : loggers)
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
}

TEST(CallerRuns, NestedScopesRunOnceWhenTheOutermostEnds) {
  system_with s{"handoff"};
  auto log = std::make_shared<thread_log>();
  auto actor = spawn_logger(*s.sys, log);
  ASSERT_TRUE(workers_asleep(*s.sys));
  {
    caller_runs outer{s.sys.get()};
    {
      caller_runs inner{s.sys.get()};
      caf::anon_send(actor, 0);
    }
    // The inner scope ran nothing: the send still waits for `outer`.
    std::lock_guard<std::mutex> guard{log->mutex};
    EXPECT_TRUE(log->ids.empty());
  }
  ASSERT_EQ(log->all_in.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(log->ids.at(0), std::this_thread::get_id());
  caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
}

} // namespace
} // namespace tb
