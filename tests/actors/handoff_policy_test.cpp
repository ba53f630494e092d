// The handoff scheduler policy (actors/scheduler/handoff_policy.hpp), driven
// directly with a stand-in coordinator and worker: which enqueues wake a
// sleeping worker, and the order jobs come out in. No threads: a sleeping
// worker is the policy's own count of sleepers, set by hand.

#include "actors/scheduler/handoff_policy.hpp"

#include <memory>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/policy/work_sharing.hpp>
#include <caf/policy/work_stealing.hpp>
#include <caf/scheduler/coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <gtest/gtest.h>

#include "actors/scheduler/scheduler_choice.hpp"

namespace tb {
namespace {

// A job the policy only queues and hands back.
class fake_job final : public caf::resumable {
public:
  resume_result resume(caf::execution_unit*, size_t) override {
    return resumable::done;
  }
  void intrusive_ptr_add_ref_impl() override {}
  void intrusive_ptr_release_impl() override {}
};

// What CAF's coordinator offers the policy: its data.
struct fake_coordinator {
  handoff_policy::coordinator_data state{nullptr};
  handoff_policy::coordinator_data& data() {
    return state;
  }
};

// What CAF's worker offers the policy: its parent and data.
struct fake_worker {
  fake_coordinator* owner;
  handoff_policy::worker_data state{nullptr};
  fake_coordinator* parent() {
    return owner;
  }
  handoff_policy::worker_data& data() {
    return state;
  }
};

class HandoffPolicyTest : public ::testing::Test {
protected:
  // Pretends that `n` workers sleep on the queue.
  void sleepers(std::size_t n) {
    coordinator.state.sleeping = n;
  }

  handoff_policy policy;
  fake_coordinator coordinator;
  fake_worker worker{&coordinator};
  fake_job a, b, c;
};

TEST_F(HandoffPolicyTest, AJobMadeRunnableByAWorkerWakesNoOneWhileItIsAlone) {
  sleepers(1);
  policy.internal_enqueue(&worker, &a);
  EXPECT_EQ(coordinator.state.wakeups, 0u);
  EXPECT_EQ(coordinator.state.handoffs, 1u);
  // The worker that made it runnable takes it next.
  EXPECT_EQ(policy.dequeue(&worker), &a);
}

TEST_F(HandoffPolicyTest, TwoQueuedJobsWakeNoOneAThirdWakesASleeper) {
  sleepers(1);
  // An actor that sends two messages (a group: the delivery and the answer
  // to the publisher) leaves two jobs its own thread runs next.
  policy.internal_enqueue(&worker, &a);
  policy.internal_enqueue(&worker, &b);
  EXPECT_EQ(coordinator.state.wakeups, 0u);
  EXPECT_EQ(coordinator.state.handoffs, 2u);
  policy.internal_enqueue(&worker, &c);
  EXPECT_EQ(coordinator.state.wakeups, 1u);
  EXPECT_EQ(policy.dequeue(&worker), &a);
  EXPECT_EQ(policy.dequeue(&worker), &b);
  EXPECT_EQ(policy.dequeue(&worker), &c);
}

TEST_F(HandoffPolicyTest, AJobFromOutsideTheWorkersWakesASleeper) {
  sleepers(2);
  policy.central_enqueue(&coordinator, &a);
  policy.external_enqueue(&worker, &b);
  EXPECT_EQ(coordinator.state.wakeups, 2u);
  EXPECT_EQ(coordinator.state.handoffs, 0u);
}

TEST_F(HandoffPolicyTest, NoOneIsWokenWhenNoOneSleeps) {
  sleepers(0);
  policy.central_enqueue(&coordinator, &a);
  policy.internal_enqueue(&worker, &b);
  EXPECT_EQ(coordinator.state.wakeups, 0u);
  EXPECT_EQ(coordinator.state.handoffs, 0u);
}

TEST_F(HandoffPolicyTest, AJobThatYieldedGoesBehindTheOthers) {
  sleepers(1);
  policy.internal_enqueue(&worker, &a);
  // `c` used up its messages per run; `a` waits, so the sleeper wakes for
  // one of the two.
  policy.resume_job_later(&worker, &c);
  EXPECT_EQ(coordinator.state.wakeups, 1u);
  EXPECT_EQ(policy.dequeue(&worker), &a);
  EXPECT_EQ(policy.dequeue(&worker), &c);
}

TEST_F(HandoffPolicyTest, ShutdownHandsOverEveryQueuedJobInOrder) {
  policy.central_enqueue(&coordinator, &a);
  policy.internal_enqueue(&worker, &b);
  policy.resume_job_later(&worker, &c);
  std::vector<caf::resumable*> seen;
  policy.foreach_central_resumable(
      &coordinator, [&](caf::resumable* job) { seen.push_back(job); });
  EXPECT_EQ(seen, (std::vector<caf::resumable*>{&a, &b, &c}));
  EXPECT_TRUE(coordinator.state.queue.empty());
}

// -- the policy in a running actor system (real threads) ---------------------

// One actor of a ring: learns its successor, then passes each count on,
// less one, until it reaches 0, which goes to `done`.
caf::behavior ring_member(caf::event_based_actor* self, caf::actor done) {
  auto next = std::make_shared<caf::actor>();
  return {[next](caf::actor successor) { *next = std::move(successor); },
          [self, next, done](int hops) {
            if (hops > 0)
              self->send(*next, hops - 1);
            else
              self->send(done, hops);
          }};
}

// Answers each int with the int plus one.
caf::behavior add_one() {
  return {[](int x) {
    return x + 1;
  }};
}

// Asks an actor on `sys` for 41 + 1; returns the answer or -1.
int ask(caf::actor_system& sys) {
  auto echo = sys.spawn(add_one);
  caf::scoped_actor self{sys};
  int got = -1;
  self->request(echo, caf::infinite, 41)
      .receive([&](int x) { got = x; }, [](caf::error&) {});
  self->send_exit(echo, caf::exit_reason::user_shutdown);
  return got;
}

TEST(SchedulerChoice, HandoffRunsTinybrokersPolicyWithBoundedRuns) {
  caf::actor_system_config cfg;
  use_scheduler(cfg, "handoff", 2);
  caf::actor_system sys{cfg};
  using handoff = caf::scheduler::coordinator<handoff_policy>;
  EXPECT_NE(dynamic_cast<handoff*>(&sys.scheduler()), nullptr);
  EXPECT_EQ(sys.scheduler().max_throughput(), handoff_max_throughput);
  EXPECT_EQ(sys.scheduler().num_workers(), 2u);
  EXPECT_EQ(ask(sys), 42);
}

TEST(SchedulerChoice, SharingAndStealingAreCafsOwn) {
  {
    caf::actor_system_config cfg;
    use_scheduler(cfg, "sharing", 2);
    caf::actor_system sys{cfg};
    using sharing = caf::scheduler::coordinator<caf::policy::work_sharing>;
    EXPECT_NE(dynamic_cast<sharing*>(&sys.scheduler()), nullptr);
    EXPECT_EQ(ask(sys), 42);
  }
  {
    caf::actor_system_config cfg;
    use_scheduler(cfg, "stealing", 2);
    caf::actor_system sys{cfg};
    using stealing = caf::scheduler::coordinator<caf::policy::work_stealing>;
    EXPECT_NE(dynamic_cast<stealing*>(&sys.scheduler()), nullptr);
    EXPECT_EQ(ask(sys), 42);
  }
}

TEST(SchedulerChoice, HandoffLosesNoWakeUpWhenActorsPassWorkAlong) {
  // A ring of actors passes a count around many times while outside
  // requests arrive: every hop is an internal enqueue, often into an empty
  // queue. A lost wake-up would leave a job queued and this test hanging.
  caf::actor_system_config cfg;
  use_scheduler(cfg, "handoff", 2);
  caf::actor_system sys{cfg};
  constexpr int ring_size = 50;
  constexpr int hops = 20000;
  caf::scoped_actor self{sys};
  std::vector<caf::actor> ring;
  for (int i = 0; i < ring_size; ++i)
    ring.push_back(sys.spawn(ring_member, caf::actor{self}));
  for (int i = 0; i < ring_size; ++i)
    self->send(ring[i], ring[(i + 1) % ring_size]);
  self->send(ring[0], hops);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(ask(sys), 42);
  int left = -1;
  self->receive([&](int x) { left = x; });
  EXPECT_EQ(left, 0);
  for (auto& actor : ring)
    self->send_exit(actor, caf::exit_reason::user_shutdown);
}

} // namespace
} // namespace tb
