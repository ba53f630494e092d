// The world of the ClientFrame fuzz target: one deterministic actor system
// per process (CAF's test coordinator), and per input a fresh router with
// two sessions that write to checking sinks.
//
// A `checking_sink` records nothing but checks every frame a session writes
// against the stream protocol (docs/protocol.md): every frame has a kind,
// deliveries go to confirmed subscriptions, confirms answer a publish that
// asked for one with one result per message, errors name their problem, and
// the sink contract holds (no write while busy or after finish).

#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/protocol.hpp"
#include "actors/router/router_actor.hpp"
#include "actors/session/frame_sink.hpp"
#include "actors/session/session_actor.hpp"

namespace tinybroker::v1 {
class ClientFrame;
} // namespace tinybroker::v1

namespace tb::fuzz {

/// Aborts with `what` (and `detail`) unless `ok`: a finding for libFuzzer.
void check(bool ok, const char* what, const std::string& detail = {});

/// A frame sink that checks what its session writes.
class checking_sink : public frame_sink {
public:
  /// Answers true unless busy; a busy sink owes its session a writable_atom.
  bool ready_to_write() override;

  /// Checks `frame` against the protocol and what the client sent.
  void write(std::unique_ptr<tinybroker::v1::ServerFrame> frame) override;

  /// Counts a released client frame; never more than were sent.
  void frame_consumed() override;

  /// Records the first call.
  void finish(ec code, const std::string& text) override;

  /// Notes a client frame handed to the session, before it is sent.
  void sent(const tinybroker::v1::ClientFrame& frame);

  /// Makes the sink busy, or ends the busy spell and sends writable_atom if
  /// the session asked for it.
  void toggle_busy();

  /// Returns true while the sink is busy.
  bool busy() const {
    return busy_;
  }

  /// The session writing here; weak, so the sink keeps no actor alive.
  caf::actor_addr session;
  /// Client frames sent to the session.
  size_t frames_sent = 0;
  /// Client frames the session released.
  size_t consumed = 0;
  /// True once `finish()` was called.
  bool finished = false;
  /// The code of the first `finish()`.
  ec finish_code = ec::none;
  /// Publishes that asked for a confirm and got none yet: request id to
  /// the message counts of the frames with that id.
  std::map<uint64_t, std::multiset<int>> awaited_confirms;

private:
  bool busy_ = false;
  bool owes_writable_ = false;
  std::set<uint64_t> confirmed_subscriptions_;
};

/// An actor system config with tinybroker's types and the test coordinator.
class world_config : public caf::actor_system_config {
public:
  /// Registers the message types and selects the deterministic scheduler.
  world_config();
};

/// The actor system and the per-input actors.
class session_world {
public:
  /// The two sessions of an input.
  static constexpr size_t session_count = 2;

  /// Starts the deterministic actor system.
  session_world();

  /// Spawns a router and fresh sessions for a new input.
  void start();

  /// Stops every actor of the input and checks that nothing is left.
  void stop();

  /// Runs scheduled actors until idle; a ping-pong that never ends is a
  /// finding.
  void run();

  /// Advances simulated time, firing timers, and runs.
  void advance(caf::timespan duration);

  /// Hands `frame` to session `index` as the gRPC bridge would.
  void send_frame(size_t index, std::shared_ptr<tinybroker::v1::ClientFrame>);

  /// Tells session `index` that the client stopped sending.
  void close(size_t index);

  /// Ends session `index` as a broken stream would (no clean close).
  void kill(size_t index);

  /// Makes the sink of session `index` busy or ready again.
  void toggle_busy(size_t index);

  /// Closes every session still open, lets them drain and checks that each
  /// finished cleanly and answered every publish that asked for a confirm.
  void drain_and_check();

private:
  struct slot {
    session_actor hdl;
    std::shared_ptr<checking_sink> sink;
    bool closed = false;
    bool killed = false;
  };

  world_config cfg_;
  caf::actor_system sys_;
  caf::scoped_actor self_;
  caf::scheduler::test_coordinator& sched_;
  router_actor router_;
  slot slots_[session_count];
};

} // namespace tb::fuzz
