// Benchmark of a consumer group actor (actors/group/group_actor.hpp) with its
// message handling, in process: a batch of messages is enqueued, the group
// dispatches them round robin to 4 stand-in member sessions, each member
// acks every delivery batch at once, and the group dispatches the next.
// Runs on CAF's deterministic test scheduler on one thread, so the figure
// is the actors' own work (mailboxes, handlers, the ledger), without thread
// hand-offs. Items processed = messages acked.
//
//   build/bench/group_actor_bench
//   build/bench/group_actor_bench --benchmark_repetitions=3
//
// BM_GroupReplica (issue 32): the same with the group's replica actor
// (actors/group/group_replica.hpp) on the same scheduler, replica:1, against
// replica:0, settings.replicas = 1 in both:
//
//   build/bench/group_actor_bench --benchmark_filter=BM_GroupReplica

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/send.hpp>

#include "actors/group/group_actor.hpp"
#include "actors/group/group_replica.hpp"

namespace {

using namespace tb;

// State of a stand-in member session.
struct member_state {
  // The actor's name in logs.
  static inline const char* name = "bench.member";
  // The group it answers.
  group_actor group;
  // Deliveries acked so far, by all members (one thread runs them all).
  std::shared_ptr<uint64_t> acked;
};

// A session that only takes group deliveries and acks each batch with one
// message, as a worker of scenario S3 does.
session_actor::behavior_type
member_impl(session_actor::stateful_pointer<member_state> self,
            group_actor group, std::shared_ptr<uint64_t> acked) {
  self->state.group = std::move(group);
  self->state.acked = std::move(acked);
  return {
      [](frame_atom, const client_frame_ptr&) {},
      [](writable_atom) {},
      [](closed_atom) {},
      [](deliver_atom, const fanout_batch&) {},
      [](route_atom, const route_list&) { return caf::ok_atom_v; },
      [](unary_atom, const unary_call_ptr&) {},
      [](tick_atom) {},
      [](stats_atom) { return session_stats{}; },
      [self](gdeliver_atom, const group_delivery_batch& batch) {
        std::vector<uint64_t> ids;
        ids.reserve(batch.items.size());
        for (auto& item : batch.items)
          ids.push_back(item.delivery_id);
        *self->state.acked += ids.size();
        self->send(self->state.group, ack_atom_v,
                   caf::actor_cast<session_actor>(self), std::move(ids));
      },
      [](expired_atom, const std::vector<uint64_t>&) {},
      [](kicked_atom, uint64_t, const std::string&) {},
      [](rejoin_atom, uint64_t, uint64_t) {},
      [](rejoin_atom, const caf::actor_addr&) {},
      [](dlq_atom, const message_ref&) {},
      [](log_tick_atom) {},
      [](auth_atom, const access_grant&) {},
      [](rdeliver_atom, const request_delivery&) {},
      [](reply_atom, uint64_t, const reply_body&) { return false; },
      [](rtimeout_atom) {},
      [](unary_req_atom, const unary_request_ptr&) {},
      [](remote_atom, std::vector<message_ref>&) { return caf::ok_atom_v; },
  };
}

// An actor system on the deterministic scheduler, with tinybroker's types.
class bench_config : public caf::actor_system_config {
public:
  bench_config() {
    tb::add_message_types(*this);
    set("scheduler.policy", caf::atom("testing"));
    set("logger.verbosity", caf::atom("quiet"));
  }
};

// Returns `count` distinct 128-byte messages on one topic, with 64
// different keys (for key_hash).
std::vector<message_ref> make_messages(std::size_t count) {
  std::vector<message_ref> result;
  for (std::size_t i = 0; i < count; ++i) {
    result.push_back(message_record::make(i + 1, 0, "jobs.eu.created",
                                          std::string(128, 'x'),
                                          "k" + std::to_string(i % 64)));
  }
  return result;
}

// Enqueues `batch` messages per iteration to a group under `policy` with 4
// members of max_in_flight 256 and runs the actors until every message is
// acked.
void BM_GroupEnqueueDispatchAck(benchmark::State& state, const char* policy) {
  auto batch = static_cast<std::size_t>(state.range(0));
  bench_config cfg;
  caf::actor_system sys{cfg};
  auto& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  group_settings settings;
  settings.pattern = "jobs.>";
  settings.policy = policy;
  auto group = sys.spawn(group_actor_impl, std::string{"bench"}, settings,
                         group_context{});
  auto acked = std::make_shared<uint64_t>(0);
  std::vector<session_actor> members;
  for (uint64_t i = 0; i < 4; ++i) {
    members.push_back(sys.spawn(member_impl, group, acked));
    member_spec spec;
    spec.subscription_id = 1;
    spec.max_in_flight = 256;
    caf::anon_send(group, join_atom_v, members.back(), std::move(spec));
  }
  sched.run();
  auto messages = make_messages(batch);
  for (auto _ : state) {
    caf::anon_send(group, enqueue_atom_v, messages);
    sched.run();
  }
  auto published = state.iterations() * static_cast<int64_t>(batch);
  state.SetItemsProcessed(published);
  // 1 when every message was delivered and acked exactly once.
  state.counters["acked_per_message"] =
      static_cast<double>(*acked) / static_cast<double>(published);
  for (auto& member : members)
    caf::anon_send_exit(member, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(group, caf::exit_reason::user_shutdown);
  sched.run();
}
// Enqueues `batch` messages per iteration (range 0) to a round-robin group
// of 4 members, with a replica attached if range 1 is 1, and runs every
// actor (group, members, replica) until all is acked and replicated.
void BM_GroupReplica(benchmark::State& state) {
  auto batch = static_cast<std::size_t>(state.range(0));
  auto replicated = state.range(1) != 0;
  bench_config cfg;
  caf::actor_system sys{cfg};
  auto& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  group_settings settings;
  settings.pattern = "jobs.>";
  settings.replicas = 1;
  auto group = sys.spawn(group_actor_impl, std::string{"bench"}, settings,
                         group_context{});
  replica_actor replica;
  if (replicated) {
    replica = sys.spawn(replica_actor_impl, std::string{"bench"},
                        std::string{"here"});
    caf::anon_send(group, replica_atom_v, replica, uint64_t{1});
  }
  auto acked = std::make_shared<uint64_t>(0);
  std::vector<session_actor> members;
  for (uint64_t i = 0; i < 4; ++i) {
    members.push_back(sys.spawn(member_impl, group, acked));
    member_spec spec;
    spec.subscription_id = 1;
    spec.max_in_flight = 256;
    caf::anon_send(group, join_atom_v, members.back(), std::move(spec));
  }
  sched.run();
  auto messages = make_messages(batch);
  for (auto _ : state) {
    caf::anon_send(group, enqueue_atom_v, messages);
    sched.run();
  }
  auto published = state.iterations() * static_cast<int64_t>(batch);
  state.SetItemsProcessed(published);
  state.counters["acked_per_message"] =
      static_cast<double>(*acked) / static_cast<double>(published);
  for (auto& member : members)
    caf::anon_send_exit(member, caf::exit_reason::user_shutdown);
  if (replica)
    caf::anon_send_exit(replica, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(group, caf::exit_reason::user_shutdown);
  sched.run();
}
BENCHMARK(BM_GroupReplica)
    ->ArgNames({"batch", "replica"})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({256, 0})
    ->Args({256, 1});

BENCHMARK_CAPTURE(BM_GroupEnqueueDispatchAck, round_robin, "round_robin")
    ->ArgName("batch")
    ->Arg(1)
    ->Arg(256);
BENCHMARK_CAPTURE(BM_GroupEnqueueDispatchAck, key_hash, "key_hash")
    ->ArgName("batch")
    ->Arg(256);
BENCHMARK_CAPTURE(BM_GroupEnqueueDispatchAck, least_loaded, "least_loaded")
    ->ArgName("batch")
    ->Arg(256);

} // namespace
