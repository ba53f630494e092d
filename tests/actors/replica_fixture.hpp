// The fixture of the replica tests (issue 32): the group fixture plus a
// group "work" on "jobs.>" with a simulated clock of message times, replica
// actors attached to it directly (as the router of the failover branch
// does), a recording stand-in replica, and views of both sides' books.

#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "actors/group/group_actor.hpp"
#include "actors/group/group_replica.hpp"
#include "tests/actors/group_fixture.hpp"

namespace tb::test {

/// What a stand-in replica received.
struct replica_record {
  /// Items per rsnap chunk, in order.
  std::vector<std::size_t> chunk_sizes;
  /// first/last flags per chunk.
  std::vector<std::pair<bool, bool>> chunk_flags;
  /// Sequence numbers received, in order (chunks, holds, changes).
  std::vector<uint64_t> seqs;
  /// Messages received in rhold.
  std::size_t held = 0;
};

/// One held message as (key, attempts, in flight).
using book_entry = std::tuple<uint64_t, uint32_t, bool>;

/// The replica tests' fixture.
class replica_test : public group_test {
protected:
  /// The Unix time the simulated clock starts at, in nanoseconds.
  static constexpr int64_t unix_start = 1'700'000'000'000'000'000;

  replica_test() {
    deref<tb::router_state>(router).group_ctx.unix_now = [this] {
      return unix_now();
    };
  }

  ~replica_test() override {
    run();
    for (auto& r : replicas_)
      self->send_exit(r, caf::exit_reason::user_shutdown);
    run();
  }

  /// Returns the simulated time as Unix nanoseconds.
  int64_t unix_now() {
    using std::chrono::nanoseconds;
    return unix_start +
           std::chrono::duration_cast<nanoseconds>(sched.clock().now() - start_)
               .count();
  }

  /// Creates "work" on "jobs.>" with `replicas`, changed by `change`.
  template <class F>
  void create_work(uint32_t replicas, F change) {
    auto settings = group_settings("jobs.>");
    settings.replicas = replicas;
    change(settings);
    create_group("work", settings);
  }

  /// Creates "work" on "jobs.>" with `replicas`.
  void create_work(uint32_t replicas = 1) {
    create_work(replicas, [](tb::group_settings&) {});
  }

  /// Spawns a replica of "work" (stopped when the test ends).
  tb::replica_actor spawn_replica() {
    auto r = sys.spawn(tb::replica_actor_impl, std::string{"work"},
                       std::string{"node-a"});
    replicas_.push_back(caf::actor_cast<caf::actor>(r));
    return r;
  }

  /// Spawns a stand-in replica that records what it gets and never
  /// answers.
  tb::replica_actor spawn_recorder(std::shared_ptr<replica_record> rec) {
    auto r = sys.spawn(
        [rec](tb::replica_actor::pointer) -> tb::replica_actor::behavior_type {
          return {
              [rec](tb::rsnap_atom, const tb::replica_chunk& chunk) {
                rec->chunk_sizes.push_back(chunk.items.size());
                rec->chunk_flags.emplace_back(chunk.first, chunk.last);
                rec->seqs.push_back(chunk.seq);
              },
              [rec](tb::rhold_atom, uint64_t seq,
                    const std::vector<tb::message_ref>& msgs) {
                rec->seqs.push_back(seq);
                rec->held += msgs.size();
              },
              [rec](tb::rchange_atom, uint64_t seq, const tb::replica_change&) {
                rec->seqs.push_back(seq);
              },
              [rec](tb::rsettings_atom, uint64_t seq,
                    const tb::group_settings&) { rec->seqs.push_back(seq); },
              [](tb::promote_atom) { return tb::group_seed{}; },
              [](tb::stats_atom) { return tb::replica_stats{}; },
          };
        });
    replicas_.push_back(caf::actor_cast<caf::actor>(r));
    return r;
  }

  /// Attaches `r` to "work" at `term`, and runs.
  void attach(const tb::replica_actor& r, uint64_t term = 1) {
    self->send(group("work"), tb::replica_atom_v, r, term);
    run();
  }

  /// Returns the state of "work".
  tb::group_state& work() {
    return deref<tb::group_state>(group("work"));
  }

  /// Returns what "work" holds, by key.
  std::vector<book_entry> owner_book() {
    std::vector<book_entry> result;
    work().ledger.for_each_held(
        [&](uint64_t key, const tb::message_ref&, uint32_t attempts,
            bool in_flight) { result.emplace_back(key, attempts, in_flight); });
    std::sort(result.begin(), result.end());
    return result;
  }

  /// Returns what the replica `r` holds, by key.
  std::vector<book_entry> replica_book(const tb::replica_actor& r) {
    std::vector<book_entry> result;
    for (auto& item : deref<tb::replica_state>(r).book.items())
      result.emplace_back(item.key, item.attempts, item.in_flight);
    return result;
  }

  /// Returns the info of "work".
  tb::group_info info() {
    return query<tb::group_info>(group("work"), tb::stats_atom_v);
  }

  /// Returns the PublishConfirm frames `s` received.
  static std::size_t confirms(const test_session& s) {
    return s.sink->of_kind(pb::ServerFrame::KindCase::kPublishConfirm).size();
  }

  /// Makes a message accepted now with `payload` and `timing`.
  tb::message_ref make(const std::string& payload,
                       tb::message_timing timing = {}) {
    return tb::message_record::make(++next_id_, unix_now(), "jobs.a", payload,
                                    "", tb::header_list{}, timing);
  }

  uint64_t next_id_ = 0;

private:
  caf::actor_clock::time_point start_ = sched.clock().now();
  std::vector<caf::actor> replicas_;
};

} // namespace tb::test
