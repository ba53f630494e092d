// The recording sink of the actor tests (tests/actors/actor_fixture.hpp):
// a frame sink that records what a session writes, can play a slow client
// (busy, with or without queue room), and a session paired with its sink.

#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <gtest/gtest.h>

#include "actors/protocol.hpp"
#include "actors/session/frame_sink.hpp"
#include "actors/session/session_actor.hpp"
#include "routing/error.hpp"
#include "tinybroker.pb.h"

namespace tb::test {

namespace pb = tinybroker::v1;

// -- recording sink
// ------------------------------------------------------------

/// A frame sink that records what its session writes. It takes every frame
/// unless a test made it busy; a busy sink queues up to `set_queue_room()`
/// frames (none unless set) and owes its session a `writable_atom`, sent
/// when the test calls `complete_write()`.
class recording_sink : public tb::frame_sink {
public:
  /// Answers true unless busy; a busy sink remembers to send `writable_atom`.
  bool ready_to_write() override {
    if (busy_)
      owes_writable_ = true;
    return !busy_;
  }

  /// Answers true unless busy with its queue room used up (then it
  /// remembers to send `writable_atom`).
  bool can_queue() override {
    if (!busy_ || queued_ < queue_room_)
      return true;
    owes_writable_ = true;
    return false;
  }

  /// Records `frame`; a write while busy beyond the queue room breaks the
  /// sink contract.
  void write(std::unique_ptr<pb::ServerFrame> frame) override {
    EXPECT_TRUE(!busy_ || queued_ < queue_room_) << "write() on a busy sink";
    if (busy_)
      ++queued_;
    EXPECT_FALSE(finished) << "write() after finish()";
    if (on_write)
      on_write(*frame);
    frames.push_back(std::move(*frame));
  }

  /// Counts a client frame the session released to the reader.
  void frame_consumed() override {
    ++consumed;
  }

  /// Records the first call (later calls do nothing, as the contract says).
  void finish(ec code, const std::string& text) override {
    ++finish_calls;
    if (finished)
      return;
    finished = true;
    finish_code = code;
    finish_text = text;
  }

  /// Returns `peer_name`.
  std::string peer() const override {
    return peer_name;
  }

  /// Returns `ended`.
  std::string end_reason() const override {
    return ended;
  }

  /// Makes `ready_to_write()` answer false, as during a slow write.
  void set_busy() {
    busy_ = true;
  }

  /// Lets a busy sink queue `n` frames behind the slow write.
  void set_queue_room(size_t n) {
    queue_room_ = n;
  }

  /// Ends the slow write and sends `writable_atom` if the session asked.
  void complete_write() {
    busy_ = false;
    queued_ = 0;
    if (!std::exchange(owes_writable_, false))
      return;
    if (auto hdl = caf::actor_cast<tb::session_actor>(session))
      caf::anon_send(hdl, tb::writable_atom_v);
  }

  /// Returns copies of the written frames of one kind, in write order.
  std::vector<pb::ServerFrame> of_kind(pb::ServerFrame::KindCase kind) const {
    std::vector<pb::ServerFrame> result;
    for (auto& frame : frames)
      if (frame.kind_case() == kind)
        result.push_back(frame);
    return result;
  }

  /// Returns every written delivery, across frames, in write order.
  std::vector<pb::Delivery> deliveries() const {
    std::vector<pb::Delivery> result;
    for (auto& frame : frames)
      for (auto& delivery : frame.deliveries().deliveries())
        result.push_back(delivery);
    return result;
  }

  /// Returns the payloads of every written delivery, in write order.
  std::vector<std::string> payloads() const {
    std::vector<std::string> result;
    for (auto& delivery : deliveries())
      result.push_back(delivery.payload());
    return result;
  }

  /// The frames written so far, in write order.
  std::vector<pb::ServerFrame> frames;
  /// Called with each frame as it is written, before it is recorded.
  std::function<void(const pb::ServerFrame&)> on_write;
  /// Calls of `frame_consumed()`.
  size_t consumed = 0;
  /// Calls of `finish()`.
  size_t finish_calls = 0;
  /// True once `finish()` was called.
  bool finished = false;
  /// The code of the first `finish()`.
  ec finish_code = ec::none;
  /// The text of the first `finish()`.
  std::string finish_text;
  /// The session writing here; weak, so the sink keeps no actor alive.
  caf::actor_addr session;
  /// The client's address the sink reports (none unless a test sets one
  /// before spawning the session).
  std::string peer_name;
  /// How the stream ended, as the sink reports it (a test sets it).
  std::string ended;

private:
  bool busy_ = false;
  bool owes_writable_ = false;
  size_t queue_room_ = 0;
  size_t queued_ = 0;
};

/// A session actor together with the sink it writes to.
struct test_session {
  /// The session.
  tb::session_actor hdl;
  /// Its sink.
  std::shared_ptr<recording_sink> sink;
};

} // namespace tb::test
