// The fixture of the consumer group tests: the actor fixture plus helpers
// that create groups with a short ack_wait, join, ack and nack, and read a
// group's counters.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/group_types.hpp"
#include "tests/actors/actor_fixture.hpp"

namespace tb::test {

// -- consumer groups ----------------------------------------------------------

/// The fixture of the group tests: groups created through the router,
/// members that join and answer through session frames.
class group_test : public actor_test {
protected:
  using actor_test::actor_test;

  /// The ack_wait of groups made with `group_settings`; their tick is 100 ms.
  static constexpr std::chrono::milliseconds ack_wait = 1s;

  /// Returns default group settings for `pattern`, with the test's ack_wait.
  static tb::group_settings group_settings(std::string pattern) {
    tb::group_settings result;
    result.pattern = std::move(pattern);
    result.ack_wait = ack_wait;
    return result;
  }

  /// Creates the group `name` through the router and returns its info.
  tb::group_info create_group(const std::string& name,
                              tb::group_settings settings) {
    return query<tb::group_info>(router, tb::create_atom_v, name,
                                 std::move(settings));
  }

  /// Returns the live group actor `name`, or an invalid handle.
  tb::group_actor group(const std::string& name) {
    auto& groups = deref<tb::router_state>(router).groups;
    auto i = groups.find(name);
    return i != groups.end() ? i->second.handle : tb::group_actor{};
  }

  /// Returns the counters of the live group `name`.
  tb::group_counters counters(const std::string& name) {
    auto hdl = group(name);
    EXPECT_TRUE(hdl) << "no group named " << name;
    if (!hdl)
      return {};
    return query<tb::group_info>(hdl, tb::stats_atom_v).counters;
  }

  /// Joins `session` to the group `name` as subscription `id`, and runs.
  void join(const test_session& session, uint64_t id, const std::string& name,
            const std::string& pattern, uint32_t max_in_flight = 0,
            const std::vector<std::string>& tags = {}) {
    send_frame(session, join_frame(next_request_id(), id, pattern, name,
                                   max_in_flight, tags));
    run();
  }

  /// Acks `ids` from `session`, and runs.
  void ack(const test_session& session, const std::vector<uint64_t>& ids) {
    send_frame(session, ack_frame(next_request_id(), ids));
    run();
  }

  /// Nacks `ids` from `session` with requeue after `delay_ms`, and runs.
  void nack(const test_session& session, const std::vector<uint64_t>& ids,
            uint32_t delay_ms = 0) {
    send_frame(session, nack_frame(next_request_id(), ids, true, delay_ms));
    run();
  }

  /// Nacks `ids` from `session` without requeue (reject), and runs.
  void reject(const test_session& session, const std::vector<uint64_t>& ids) {
    send_frame(session, nack_frame(next_request_id(), ids, false));
    run();
  }

  /// Says `session` still works on `ids`, and runs.
  void in_progress(const test_session& session,
                   const std::vector<uint64_t>& ids) {
    send_frame(session, in_progress_frame(next_request_id(), ids));
    run();
  }

  /// Advances simulated time by `total` in steps of `step`, running what
  /// each step triggers (a group ticks at most once per step).
  void pass(caf::timespan total, caf::timespan step = 10ms) {
    for (caf::timespan done{0}; done < total; done += step)
      advance(std::min(step, total - done));
  }

  /// Returns the delivery ids of `deliveries`, in order.
  static std::vector<uint64_t> ids_of(const std::vector<pb::Delivery>& xs) {
    std::vector<uint64_t> result;
    for (auto& x : xs)
      result.push_back(x.delivery_id());
    return result;
  }

  /// Returns the payloads of `deliveries`, in order.
  static std::vector<std::string>
  payloads_of(const std::vector<pb::Delivery>& xs) {
    std::vector<std::string> result;
    for (auto& x : xs)
      result.push_back(x.payload());
    return result;
  }
};

} // namespace tb::test
