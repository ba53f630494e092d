// libFuzzer target: arbitrary ClientFrame sequences into session actors.
//
// Each input (format: session_input.hpp) drives two sessions wired to a
// fresh router on CAF's deterministic scheduler, as the actor tests do.
// Nothing may crash or trip a sanitizer; every frame the sessions write
// must follow the stream protocol (session_world.hpp); and once the clients
// close, each session must release every frame it read, answer every
// publish that asked for a confirm, and end its stream cleanly.

#include <cstddef>
#include <cstdint>
#include <memory>

#include <google/protobuf/stubs/logging.h>

#include "log/log.hpp"
#include "tests/fuzz/session_input.hpp"
#include "tests/fuzz/session_world.hpp"
#include "tinybroker.pb.h"

namespace {

namespace pb = tinybroker::v1;

// Returns the world, created on first use and kept for the process.
tb::fuzz::session_world& world() {
  // Never destroyed: the actor system outlives every input, and exit
  // does not wait for it.
  static auto* instance = [] {
    // Frames with bad UTF-8 in string fields are refused by design; do not
    // let protobuf log each of them, nor the broker each refusal.
    google::protobuf::SetLogHandler(nullptr);
    tb::log::set_level(tb::log::level::off);
    return new tb::fuzz::session_world;
  }();
  return *instance;
}

// Reads the input's records and plays them on `w`.
void play(tb::fuzz::session_world& w, const uint8_t* data, size_t size) {
  using tb::fuzz::op;
  size_t pos = 0;
  auto next = [&]() -> uint8_t {
    return pos < size ? data[pos++] : 0;
  };
  while (pos < size) {
    auto byte = next();
    size_t index = (byte & tb::fuzz::op_second) != 0 ? 1 : 0;
    auto what = static_cast<op>(byte & 7);
    switch (what) {
    case op::advance:
      w.advance(std::chrono::milliseconds{(next() + 1) * 50});
      break;
    case op::busy:
      w.toggle_busy(index);
      break;
    case op::close:
      if ((byte & tb::fuzz::op_kill) != 0)
        w.kill(index);
      else
        w.close(index);
      break;
    case op::run:
      w.run();
      break;
    default: { // op::frame and its spare codes 1-3
      size_t len = next();
      len |= static_cast<size_t>(next()) << 8;
      if (len > size - pos)
        len = size - pos;
      auto frame = std::make_shared<pb::ClientFrame>();
      if (frame->ParseFromArray(data + pos, static_cast<int>(len)))
        w.send_frame(index, std::move(frame));
      else
        w.close(index);
      pos += len;
      break;
    }
    }
  }
}

} // namespace

/// libFuzzer's entry point: plays `data` on fresh sessions, then checks
/// that they drain and that nothing is left running.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& w = world();
  w.start();
  play(w, data, size);
  w.drain_and_check();
  w.stop();
  return 0;
}
