// Tests of a group's replica stream (issue 32, docs/cluster.md "The replica
// stream"): publishes confirmed once the replica has their batch, the
// replica's books equal to the owner's through every kind of change, the
// full state in chunks, a replica lost, promote, and no cost without one.

#include <string>
#include <vector>

#include "tests/actors/replica_fixture.hpp"

namespace tb::test {
namespace {

class GroupReplica : public replica_test {
protected:
  test_session pub = spawn_session();
  test_session a = spawn_session();
  test_session b = spawn_session();
};

TEST_F(GroupReplica, PublishIsConfirmedOnlyAfterTheReplicaAcks) {
  create_work();
  auto r = spawn_replica();
  attach(r);
  EXPECT_TRUE(info().replica_synced);
  send_frame(pub, publish_frame(next_request_id(), "jobs.a", 3));
  run_except(r);
  // The group holds the batch, the replica has not applied it: no confirm.
  EXPECT_EQ(confirms(pub), 0u);
  EXPECT_EQ(work().repl.waiting.size(), 1u);
  EXPECT_EQ(work().ledger.held_messages(), 3u);
  run();
  EXPECT_EQ(confirms(pub), 1u);
  auto i = info();
  EXPECT_EQ(i.replica_unacked, 0u);
  EXPECT_TRUE(i.replica_synced);
  EXPECT_EQ(i.confirmed_unreplicated, 0u);
  auto stats = query<tb::replica_stats>(r, tb::stats_atom_v);
  EXPECT_EQ(stats.held, 3u);
  EXPECT_TRUE(stats.synced);
  EXPECT_EQ(stats.group, "work");
  EXPECT_EQ(stats.owner, "node-a");
}

TEST_F(GroupReplica, ReplicaBooksEqualTheOwnersThroughEveryChange) {
  create_work(1, [](tb::group_settings& s) { s.max_deliveries = 2; });
  auto r = spawn_replica();
  attach(r);
  publish(pub, "jobs.a", 12);
  EXPECT_EQ(replica_book(r), owner_book());
  join(a, 1, "work", "jobs.>", 4);
  join(b, 2, "work", "jobs.>", 2);
  EXPECT_EQ(replica_book(r), owner_book());
  auto da = ids_of(a.sink->deliveries());
  auto db = ids_of(b.sink->deliveries());
  ASSERT_EQ(da.size(), 4u);
  ASSERT_EQ(db.size(), 2u);
  ack(a, {da[0]});
  EXPECT_EQ(replica_book(r), owner_book());
  nack(a, {da[1]});
  EXPECT_EQ(replica_book(r), owner_book());
  reject(a, {da[2]}); // dead letter
  EXPECT_EQ(replica_book(r), owner_book());
  nack(a, {da[3]}, 50); // parked
  EXPECT_EQ(replica_book(r), owner_book());
  // b's two time out: returned, then delivered again.
  pass(ack_wait + 200ms);
  EXPECT_EQ(replica_book(r), owner_book());
  // Whatever is in flight now is nacked until it uses up its deliveries.
  for (int round = 0; round < 3; ++round) {
    std::vector<uint64_t> live;
    work().ledger.for_each_flight(
        [&](uint64_t id, const group_ledger::flight&) { live.push_back(id); });
    auto to_a = ids_of(a.sink->deliveries());
    std::vector<uint64_t> mine;
    for (auto id : live)
      if (std::find(to_a.begin(), to_a.end(), id) != to_a.end())
        mine.push_back(id);
    nack(a, mine);
    EXPECT_EQ(replica_book(r), owner_book());
  }
  EXPECT_GT(counters("work").dead_lettered, 1u);
  query<uint64_t>(router, tb::purge_atom_v, std::string{"work"});
  EXPECT_EQ(replica_book(r), owner_book());
  EXPECT_EQ(work().ledger.pending(), 0u);
  // The replica never delivered: members got exactly the owner's
  // deliveries.
  EXPECT_EQ(a.sink->deliveries().size() + b.sink->deliveries().size(),
            counters("work").delivered);
  auto stats = query<tb::replica_stats>(r, tb::stats_atom_v);
  EXPECT_EQ(stats.held, work().ledger.held_messages());
  EXPECT_EQ(stats.bytes, work().ledger.held_bytes());
  EXPECT_EQ(stats.applied_seq, work().repl.seq);
}

TEST_F(GroupReplica, LateAttachGetsTheFullStateInChunksOfAtMost1024) {
  create_work();
  publish(pub, "jobs.a", 2500);
  // Confirmed without a replica although replicas = 1: counted.
  EXPECT_EQ(confirms(pub), 1u);
  EXPECT_EQ(info().confirmed_unreplicated, 2500u);
  EXPECT_FALSE(info().replica_synced);
  auto rec = std::make_shared<replica_record>();
  attach(spawn_recorder(rec));
  EXPECT_EQ(rec->chunk_sizes, (std::vector<std::size_t>{1024, 1024, 452}));
  using flags = std::vector<std::pair<bool, bool>>;
  EXPECT_EQ(rec->chunk_flags,
            (flags{{true, false}, {false, false}, {false, true}}));
  EXPECT_EQ(rec->seqs, (std::vector<uint64_t>{1, 2, 3}));
  // A real replica attached later has it all, in the owner's order.
  auto r = spawn_replica();
  attach(r, 2);
  EXPECT_TRUE(info().replica_synced);
  EXPECT_EQ(replica_book(r).size(), 2500u);
  EXPECT_EQ(replica_book(r), owner_book());
}

TEST_F(GroupReplica, ReplicaDownRefusesWaitingPublishesAsMayOrMayNot) {
  create_work();
  auto rec = std::make_shared<replica_record>();
  auto r = spawn_recorder(rec);
  attach(r);
  publish(pub, "jobs.a", 3);
  publish(pub, "jobs.a", 2);
  // The stand-in never acknowledges: both publishes wait.
  EXPECT_EQ(confirms(pub), 0u);
  EXPECT_EQ(rec->held, 5u);
  EXPECT_EQ(info().replica_unacked, 2u);
  EXPECT_FALSE(info().replica_synced);
  self->send_exit(r, caf::exit_reason::kill);
  run();
  // Both are answered, refused UNAVAILABLE: never confirmed with one copy
  // (a stopped owner whose replica took over would lose them). The owner
  // still holds the 5 messages.
  auto answers = pub.sink->of_kind(pb::ServerFrame::KindCase::kPublishConfirm);
  ASSERT_EQ(answers.size(), 2u);
  for (auto& answer : answers)
    for (auto& result : answer.publish_confirm().results()) {
      ASSERT_TRUE(result.has_error()) << answer.DebugString();
      EXPECT_EQ(result.error().code(), 14); // UNAVAILABLE
      EXPECT_NE(result.error().message().find(
                    "group \"work\": its replica ended before it "
                    "acknowledged this batch; the owner holds it"),
                std::string::npos)
          << result.error().message();
    }
  auto i = info();
  EXPECT_EQ(i.replica_unacked, 0u);
  EXPECT_EQ(i.confirmed_unreplicated, 0u);
  EXPECT_EQ(work().repl.refused_unacked, 5u);
  EXPECT_EQ(work().ledger.held_messages(), 5u);
  EXPECT_FALSE(work().repl.replica);
  // Later publishes are confirmed at once, and counted.
  publish(pub, "jobs.a", 1);
  auto last =
      pub.sink->of_kind(pb::ServerFrame::KindCase::kPublishConfirm).back();
  EXPECT_FALSE(last.publish_confirm().results(0).has_error());
  EXPECT_EQ(info().confirmed_unreplicated, 1u);
}

TEST_F(GroupReplica, PromoteAnswersTheSeedAndTheReplicaQuits) {
  create_work();
  auto r = spawn_replica();
  attach(r);
  publish(pub, "jobs.a", 5);
  join(a, 1, "work", "jobs.>", 2);
  auto seed = query<tb::group_seed>(r, tb::promote_atom_v);
  run();
  EXPECT_TRUE(terminated(r));
  ASSERT_EQ(seed.items.size(), 5u);
  for (uint64_t k = 0; k < 5; ++k) {
    EXPECT_EQ(seed.items[k].key, k + 1);
    EXPECT_EQ(seed.items[k].in_flight, k < 2);
    EXPECT_EQ(seed.items[k].attempts, k < 2 ? 1u : 0u);
    EXPECT_EQ(seed.items[k].message->payload(), "m" + std::to_string(k));
  }
  EXPECT_EQ(seed.next_key, 6u);
  EXPECT_EQ(seed.settings.replicas, 1u);
  EXPECT_EQ(seed.settings.pattern, "jobs.>");
}

TEST_F(GroupReplica, ReplicaQuitsWhenTheGroupIsDeletedAndStaysWhenItsNodeDies) {
  create_work();
  auto r = spawn_replica();
  attach(r);
  query<uint64_t>(group("work"), tb::delete_atom_v);
  run();
  EXPECT_TRUE(terminated(r));
  // An owner that ends otherwise (its node lost): the replica waits.
  tb::group_settings settings = group_settings("jobs.>");
  settings.replicas = 1;
  auto owner = sys.spawn(tb::group_actor_impl, std::string{"lone"}, settings,
                         tb::group_context{});
  auto r2 = spawn_replica();
  self->send(owner, tb::replica_atom_v, r2, uint64_t{1});
  run();
  self->send(owner, tb::enqueue_atom_v,
             std::vector<tb::message_ref>{make("x"), make("y")});
  run();
  self->send_exit(owner, caf::exit_reason::remote_link_unreachable);
  run();
  EXPECT_FALSE(terminated(r2));
  auto seed = query<tb::group_seed>(r2, tb::promote_atom_v);
  EXPECT_EQ(seed.items.size(), 2u);
}

TEST_F(GroupReplica, OutOfOrderOrUnattachedMessagesAreIgnored) {
  auto r = spawn_replica();
  // Before the first rsnap: ignored, no crash.
  self->send(r, tb::rhold_atom_v, uint64_t{1},
             std::vector<tb::message_ref>{make("x")});
  self->send(r, tb::rchange_atom_v, uint64_t{2},
             tb::replica_change{tb::replica_change_kind::removed, {1}});
  run();
  EXPECT_EQ(replica_book(r).size(), 0u);
  EXPECT_EQ(deref<tb::replica_state>(r).ignored, 2u);
  create_work();
  attach(r);
  publish(pub, "jobs.a", 2);
  // A gap in the sequence: ignored, the books stay as they were.
  auto seq = work().repl.seq;
  caf::anon_send(r, tb::rhold_atom_v, seq + 2,
                 std::vector<tb::message_ref>{make("z")});
  run();
  EXPECT_EQ(replica_book(r), owner_book());
  EXPECT_EQ(deref<tb::replica_state>(r).ignored, 3u);
}

TEST_F(GroupReplica, AnOlderTermIsRefusedAndANullReplicaDetaches) {
  create_work();
  auto r = spawn_replica();
  attach(r, 3);
  auto old = spawn_replica();
  attach(old, 2); // an older term's router: refused
  EXPECT_EQ(work().repl.replica, r);
  EXPECT_FALSE(deref<tb::replica_state>(old).attached);
  attach(tb::replica_actor{}, 3);
  EXPECT_FALSE(work().repl.replica);
  publish(pub, "jobs.a", 2);
  EXPECT_EQ(confirms(pub), 1u);
  EXPECT_EQ(info().confirmed_unreplicated, 2u);
  EXPECT_EQ(query<tb::replica_stats>(r, tb::stats_atom_v).held, 0u);
}

TEST_F(GroupReplica,
       WithoutReplicasPublishesAreConfirmedAtOnceAndNothingIsCounted) {
  create_work(0);
  publish(pub, "jobs.a", 4);
  EXPECT_EQ(confirms(pub), 1u);
  auto i = info();
  EXPECT_EQ(i.confirmed_unreplicated, 0u);
  EXPECT_EQ(i.replica_unacked, 0u);
  EXPECT_FALSE(i.replica_synced);
  EXPECT_TRUE(work().repl.batch.empty());
  EXPECT_EQ(work().repl.seq, 0u);
}

} // namespace
} // namespace tb::test
