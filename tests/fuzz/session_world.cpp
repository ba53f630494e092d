#include "tests/fuzz/session_world.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "tinybroker.pb.h"

namespace tb::fuzz {

namespace pb = tinybroker::v1;

using namespace std::chrono_literals;

namespace {

// The most events one `run()` may take; far above what an input can cause
// unless actors ping-pong forever.
constexpr size_t max_events = 1'000'000;

} // namespace

void check(bool ok, const char* what, const std::string& detail) {
  if (ok)
    return;
  std::fprintf(stderr, "fuzz_session: %s %s\n", what, detail.c_str());
  std::abort();
}

// -- checking_sink ------------------------------------------------------------

bool checking_sink::ready_to_write() {
  if (busy_)
    owes_writable_ = true;
  return !busy_ && !finished;
}

void checking_sink::write(std::unique_ptr<pb::ServerFrame> frame) {
  check(!busy_, "write() on a busy sink");
  check(!finished, "write() after finish()", frame->ShortDebugString());
  using kind = pb::ServerFrame::KindCase;
  switch (frame->kind_case()) {
  case kind::KIND_NOT_SET:
    check(false, "a frame without a kind");
    break;
  case kind::kDeliveries:
    check(frame->deliveries().deliveries_size() > 0, "an empty deliveries");
    for (auto& d : frame->deliveries().deliveries()) {
      check(confirmed_subscriptions_.count(d.subscription_id()) != 0,
            "a delivery before its Subscribed", d.ShortDebugString());
      check(d.message_id() != 0, "a delivery without id");
      check(d.delivery_id() == 0 || d.attempt() >= 1,
            "a group delivery without attempt", d.ShortDebugString());
    }
    break;
  case kind::kPublishConfirm: {
    auto& confirm = frame->publish_confirm();
    auto i = awaited_confirms.find(confirm.request_id());
    check(i != awaited_confirms.end(), "a confirm nobody asked for",
          confirm.ShortDebugString());
    auto j = i->second.find(confirm.results_size());
    check(j != i->second.end(), "a confirm with a wrong result count",
          confirm.ShortDebugString());
    i->second.erase(j);
    if (i->second.empty())
      awaited_confirms.erase(i);
    for (auto& result : confirm.results())
      check(result.id() != 0 || result.has_error(), "a refusal without error",
            result.ShortDebugString());
    break;
  }
  case kind::kSubscribed:
    confirmed_subscriptions_.insert(frame->subscribed().subscription_id());
    break;
  case kind::kSubscribedBatch:
    for (auto id : frame->subscribed_batch().subscription_ids())
      confirmed_subscriptions_.insert(id);
    break;
  case kind::kError: {
    auto& error = frame->error();
    check(error.error().code() != 0 && !error.error().reason().empty() &&
              !error.error().message().empty() && !error.request().empty(),
          "an error frame that says too little", error.ShortDebugString());
    // A batch refused as a whole gets an error instead of its confirm.
    auto i = awaited_confirms.find(error.request_id());
    if (error.request() == "publish" &&
        error.error().reason() == "limit_exceeded" &&
        i != awaited_confirms.end()) {
      i->second.erase(i->second.begin());
      if (i->second.empty())
        awaited_confirms.erase(i);
    }
    break;
  }
  case kind::kUnsubscribed:
  case kind::kDropped:
  case kind::kResponse:
    break;
  }
}

void checking_sink::frame_consumed() {
  ++consumed;
  check(consumed <= frames_sent, "more frames released than sent");
}

void checking_sink::finish(ec code, const std::string&) {
  if (finished)
    return;
  finished = true;
  finish_code = code;
}

void checking_sink::sent(const pb::ClientFrame& frame) {
  ++frames_sent;
  if (frame.has_publish() && frame.publish().confirm())
    awaited_confirms[frame.request_id()].insert(
        frame.publish().messages_size());
}

void checking_sink::toggle_busy() {
  busy_ = !busy_;
  if (busy_ || !std::exchange(owes_writable_, false))
    return;
  if (auto hdl = caf::actor_cast<session_actor>(session))
    caf::anon_send(hdl, writable_atom_v);
}

// -- session_world ------------------------------------------------------------

world_config::world_config() {
  tb::add_message_types(*this);
  set("scheduler.policy", caf::atom("testing"));
  set("logger.verbosity", caf::atom("quiet"));
}

session_world::session_world()
    : sys_(cfg_), self_(sys_, true),
      sched_(
          dynamic_cast<caf::scheduler::test_coordinator&>(sys_.scheduler())) {
  // nop
}

void session_world::start() {
  // Small limits and short timers, so that inputs reach them.
  broker_context ctx;
  ctx.limits.max_message_bytes = 256;
  ctx.limits.max_publish_batch = 8;
  ctx.limits.subscription_buffer = 4;
  ctx.limits.max_subscriptions_per_session = 6;
  ctx.limits.max_session_buffered_bytes = 4096;
  ctx.limits.max_in_flight_per_session = 4;
  ctx.limits.max_frame_messages = 3;
  ctx.limits.max_routes_per_session = 4;
  ctx.route_idle_timeout = 500ms;
  router_settings settings;
  settings.topic_idle_timeout = 1s;
  settings.group_defaults.ack_wait = 1s;
  settings.group_defaults.max_deliveries = 3;
  settings.group_defaults.max_pending_messages = 8;
  settings.group_defaults.max_pending_bytes = 2048;
  settings.session_context = ctx;
  router_ = sys_.spawn(router_actor_impl, settings);
  ctx.router = router_;
  for (auto& s : slots_) {
    s = slot{};
    s.sink = std::make_shared<checking_sink>();
    s.hdl = sys_.spawn(session_actor_impl, ctx, frame_sink_ptr{s.sink},
                       access_grant{});
    s.sink->session = s.hdl.address();
  }
  run();
}

void session_world::stop() {
  run();
  for (auto& s : slots_)
    self_->send_exit(s.hdl, caf::exit_reason::user_shutdown);
  self_->send_exit(router_, caf::exit_reason::user_shutdown);
  run();
  for (auto& s : slots_)
    s = slot{};
  router_ = nullptr;
  // Timers of dead actors may still be pending; firing them runs nothing.
  sched_.advance_time(1h);
  run();
  check(!sched_.has_job(), "jobs left after the input");
}

void session_world::run() {
  check(sched_.run(max_events) < max_events, "actors never went idle");
}

void session_world::advance(caf::timespan duration) {
  sched_.advance_time(duration);
  run();
}

void session_world::send_frame(size_t index,
                               std::shared_ptr<pb::ClientFrame> frame) {
  auto& s = slots_[index];
  if (s.closed || s.killed)
    return; // the bridge reads nothing after the client's half-close
  s.sink->sent(*frame);
  self_->send(s.hdl, frame_atom_v, client_frame_ptr{std::move(frame)});
}

void session_world::close(size_t index) {
  auto& s = slots_[index];
  if (s.closed || s.killed)
    return;
  s.closed = true;
  self_->send(s.hdl, closed_atom_v);
}

void session_world::kill(size_t index) {
  auto& s = slots_[index];
  if (s.killed)
    return;
  s.killed = true;
  self_->send_exit(s.hdl, caf::exit_reason::user_shutdown);
}

void session_world::toggle_busy(size_t index) {
  slots_[index].sink->toggle_busy();
}

void session_world::drain_and_check() {
  run();
  for (size_t i = 0; i < session_count; ++i) {
    if (slots_[i].sink->busy())
      slots_[i].sink->toggle_busy();
    close(i);
  }
  run();
  for (auto& s : slots_) {
    if (s.killed)
      continue;
    auto& sink = *s.sink;
    check(sink.finished, "a closed session did not finish");
    check(sink.finish_code == ec::none, "a closed session ended with an error");
    check(sink.consumed == sink.frames_sent, "client frames never released",
          std::to_string(sink.consumed) + " of " +
              std::to_string(sink.frames_sent));
    if (!sink.awaited_confirms.empty())
      check(false, "a publish never confirmed",
            "request " + std::to_string(sink.awaited_confirms.begin()->first));
  }
}

} // namespace tb::fuzz
