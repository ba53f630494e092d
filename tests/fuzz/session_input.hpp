// The input format of the ClientFrame fuzz target, shared by the target and
// the seed generator.
//
// An input is a sequence of records, each starting with an op byte. Bit 3
// of the op picks one of the two sessions; the low three bits say what
// happens to it:
//
//   0-3  a client frame: a 16-bit little-endian length, then that many
//        bytes of a serialized tinybroker.v1.ClientFrame. Bytes that do not
//        parse end the stream, as gRPC would (the session sees a close).
//   4    time passes: one more byte n, then (n + 1) * 50 ms go by.
//   5    the session's stream becomes busy writing, or ready again.
//   6    the client half-closes (bit 4 clear) or the stream breaks (set).
//   7    the actors run until idle (otherwise they run at the end).
//
// A record cut short by the end of the input is taken as far as it goes.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tb::fuzz {

/// What a record does (the op's low three bits).
enum class op : uint8_t {
  /// A serialized client frame follows.
  frame = 0,
  /// A time step follows.
  advance = 4,
  /// The stream toggles between busy and ready.
  busy = 5,
  /// The client half-closes, or with `op_kill` the stream breaks.
  close = 6,
  /// The actors run until idle.
  run = 7,
};

/// The op bit that selects the second session.
constexpr uint8_t op_second = 0x08;

/// The op bit that turns a close into a broken stream.
constexpr uint8_t op_kill = 0x10;

/// Appends a record of `what` for session `index` to `out`.
inline void put_op(std::string& out, op what, size_t index,
                   uint8_t extra_bits = 0) {
  out += static_cast<char>(static_cast<uint8_t>(what) |
                           (index != 0 ? op_second : 0) | extra_bits);
}

/// Appends a frame record for session `index` holding `serialized`.
inline void put_frame(std::string& out, size_t index,
                      const std::string& serialized) {
  put_op(out, op::frame, index);
  out += static_cast<char>(serialized.size() & 0xff);
  out += static_cast<char>((serialized.size() >> 8) & 0xff);
  out += serialized;
}

/// Appends a time step of (`steps` + 1) * 50 ms.
inline void put_advance(std::string& out, uint8_t steps) {
  put_op(out, op::advance, 0);
  out += static_cast<char>(steps);
}

} // namespace tb::fuzz
