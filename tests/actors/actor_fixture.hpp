// The shared fixture of the actor tests: a deterministic actor system (CAF's
// test coordinator under GoogleTest, without caf/test/dsl.hpp), a frame sink
// that records what a session writes (tests/actors/recording_sink.hpp), and
// builders for client frames (tests/actors/client_frames.hpp).
//
// Nothing runs until a test calls `run()`; simulated time moves only with
// `advance()`. Every actor the fixture spawns (and every topic the router
// spawned) is stopped when the test ends, so `~actor_system` never waits.

#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <gtest/gtest.h>

#include "actors/broker_context.hpp"
#include "actors/protocol.hpp"
#include "actors/router/router_actor.hpp"
#include "actors/session/frame_sink.hpp"
#include "actors/session/session_actor.hpp"
#include "actors/topic/topic_shard.hpp"
#include "tests/actors/client_frames.hpp"
#include "tests/actors/recording_sink.hpp"
#include "tinybroker.pb.h"

namespace tb::test {

namespace pb = tinybroker::v1;

using namespace std::chrono_literals;

/// An actor system config with tinybroker's types and the test coordinator.
class test_config : public caf::actor_system_config {
public:
  /// Registers the message types and selects the deterministic scheduler.
  test_config() {
    tb::add_message_types(*this);
    set("scheduler.policy", caf::atom("testing"));
  }
};

// -- fixture
// -------------------------------------------------------------------

/// A router plus whatever sessions a test spawns, on the test coordinator.
class actor_test : public ::testing::Test {
protected:
  /// How long the router's topics live without users.
  static constexpr std::chrono::milliseconds topic_idle = 1s;
  /// How long a session caches a route it does not use.
  static constexpr std::chrono::milliseconds route_idle = 500ms;

  /// Spawns the router.
  actor_test() : actor_test([](tb::router_settings&) {}) {
    // nop
  }

  /// Spawns the router with the fixture's settings, changed by `configure`.
  explicit actor_test(
      const std::function<void(tb::router_settings&)>& configure) {
    tb::router_settings settings;
    settings.topic_idle_timeout = topic_idle;
    settings.session_context = context();
    configure(settings);
    router = sys.spawn(tb::router_actor_impl, settings);
  }

  /// Stops every session, topic shard and the router, so the system can shut
  /// down.
  ~actor_test() override {
    run();
    for (auto& session : sessions_)
      self->send_exit(session, caf::exit_reason::user_shutdown);
    if (!terminated(router)) {
      for (auto& shard : deref<tb::router_state>(router).shards)
        self->send_exit(shard, caf::exit_reason::user_shutdown);
      self->send_exit(router, caf::exit_reason::user_shutdown);
    }
    run();
  }

  /// Runs every scheduled actor until no messages are left; returns how many
  /// events ran. Timers fire only through `advance()`.
  size_t run() {
    return sched.run();
  }

  /// Runs every actor except `hdl` until only `hdl` has messages left, so
  /// that a test can hold one actor back to force an interleaving.
  template <class Handle>
  size_t run_except(const Handle& hdl) {
    auto* held = dynamic_cast<caf::resumable*>(
        caf::actor_cast<caf::abstract_actor*>(hdl));
    return sched.run_jobs_filtered(
        [held](caf::resumable* job) { return job != held; });
  }

  /// Lets `hdl` handle exactly one message from its mailbox.
  template <class Handle>
  void run_one(const Handle& hdl) {
    ASSERT_TRUE(sched.prioritize(hdl)) << "nothing to run";
    sched.run_once();
  }

  /// Advances simulated time by `duration`, then runs what it triggered.
  void advance(caf::timespan duration) {
    sched.advance_time(duration);
    run();
  }

  /// Returns the state of the stateful actor behind `hdl`.
  template <class State, class Handle>
  State& deref(const Handle& hdl) {
    auto* ptr = caf::actor_cast<caf::abstract_actor*>(hdl);
    EXPECT_NE(ptr, nullptr);
    using actor_type = typename Handle::template stateful_base<State>;
    return dynamic_cast<actor_type&>(*ptr).state;
  }

  /// Returns true if the actor behind `hdl` has terminated.
  template <class Handle>
  bool terminated(const Handle& hdl) {
    auto* ptr = caf::actor_cast<caf::abstract_actor*>(hdl);
    return ptr == nullptr || ptr->getf(caf::abstract_actor::is_terminated_flag);
  }

  /// Sends a request to `hdl` and returns the reply (a default `T` and a
  /// test failure if there is none). The target runs inline; `run()` then
  /// completes replies that the target delegated (the router's resolve).
  template <class T, class Handle, class... Ts>
  T query(const Handle& hdl, Ts... xs) {
    run();
    sched.inline_next_enqueue();
    auto response = self->request(hdl, caf::infinite, std::move(xs)...);
    sched.after_next_enqueue(std::function<void()>{});
    run();
    T result{};
    if (self->mailbox().empty()) {
      ADD_FAILURE() << "no reply to a query";
      return result;
    }
    response.receive([&](T& x) { result = std::move(x); },
                     [&](caf::error& err) {
                       ADD_FAILURE() << "query failed: " << sys.render(err);
                     });
    return result;
  }

  /// Returns the router's counters.
  tb::router_stats router_stats() {
    return query<tb::router_stats>(router, tb::stats_atom_v);
  }

  /// Returns the shard that holds the topic `name`.
  tb::topic_shard_actor shard_of(const std::string& name) {
    return tb::shard_of(deref<tb::router_state>(router), name);
  }

  /// Returns the live topic `name` in its shard, or null.
  const tb::shard_topic* topic(const std::string& name) {
    auto& topics = deref<tb::topic_shard_state>(shard_of(name)).topics;
    auto i = topics.find(name);
    return i != topics.end() ? &i->second : nullptr;
  }

  /// Returns the number of live topics over all shards.
  std::size_t live_topics() {
    std::size_t result = 0;
    for (auto& shard : deref<tb::router_state>(router).shards)
      result += deref<tb::topic_shard_state>(shard).topics.size();
    return result;
  }

  /// Returns the counters of a session.
  tb::session_stats stats(const test_session& session) {
    return query<tb::session_stats>(session.hdl, tb::stats_atom_v);
  }

  /// Returns a broker context for a new session, sharing router and ids.
  tb::broker_context context() {
    tb::broker_context ctx;
    ctx.router = router;
    ctx.route_idle_timeout = route_idle;
    ctx.ids = ids_;
    return ctx;
  }

  /// Spawns a session writing to a fresh recording sink that reports
  /// `peer` as the client's address, for a client allowed what `grant`
  /// allows (everything by default).
  test_session spawn_session(tb::broker_context ctx, std::string peer = {},
                             tb::access_grant grant = {}) {
    auto sink = std::make_shared<recording_sink>();
    sink->peer_name = std::move(peer);
    auto hdl = sys.spawn(tb::session_actor_impl, std::move(ctx),
                         tb::frame_sink_ptr{sink}, std::move(grant));
    sink->session = hdl.address();
    sessions_.push_back(hdl);
    return test_session{hdl, std::move(sink)};
  }

  /// Spawns a session with the default context.
  test_session spawn_session() {
    return spawn_session(context());
  }

  /// Hands `frame` to `session` as its gRPC bridge would (does not run).
  void send_frame(const test_session& session, client_frame_ptr frame) {
    self->send(session.hdl, tb::frame_atom_v, std::move(frame));
  }

  /// Subscribes `session` to `pattern` and runs until it is confirmed.
  void subscribe(const test_session& session, uint64_t subscription_id,
                 const std::string& pattern) {
    send_frame(session,
               subscribe_frame(next_request_id_++, subscription_id, pattern));
    run();
  }

  /// Publishes `n` messages to `topic` from `session` and runs.
  void publish(const test_session& session, const std::string& topic,
               size_t n = 1, const std::string& prefix = "m") {
    send_frame(session, publish_frame(next_request_id_++, topic, n, prefix));
    run();
  }

  /// Returns a fresh request id for a client frame.
  uint64_t next_request_id() {
    return next_request_id_++;
  }

  test_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys, true};
  caf::scheduler::test_coordinator& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  /// The router every session of the test uses.
  tb::router_actor router;

private:
  std::shared_ptr<tb::id_sequence> ids_ = std::make_shared<tb::id_sequence>();
  std::vector<tb::session_actor> sessions_;
  uint64_t next_request_id_ = 1000;
};

} // namespace tb::test
