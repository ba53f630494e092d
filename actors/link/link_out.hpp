// The sending end of a link to one peer node (docs/cluster.md, "Fan-out
// across nodes").
//
// Sessions hand it one batch per publish frame with the messages the peer
// is interested in. It packs them into network batches of bounded size and
// keeps at most `window_batches` of them unacknowledged (CAF 0.17's network
// layer has no flow control, and its streams deadlock under credit: plain
// messages with an own window). What does not fit in the window waits in a
// buffer of at most `buffer_bytes`; past it, the oldest waiting messages
// for that peer are dropped, counted and logged, like a slow subscriber's.
//
//   session --link(msgs)--> [buffer] --link_frame(seq)--> peer's link_in
//                               ^                              |
//                               +--------link_ack(seq)---------+
//
// One link per peer carries every publisher's messages to it, so a
// publisher's order holds across nodes. When the peer goes down, the
// router asks the link (`peer_down`) how many messages it still held,
// waiting or sent and not acknowledged: those are lost with the peer, and
// counted (Stats: ClusterPeer.lost).

#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>

#include <caf/stateful_actor.hpp>

#include "actors/protocol.hpp"

namespace tb {

/// State of a link's sending end.
struct link_out_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.link_out";

  /// The peer's node name (for logs).
  std::string peer;
  /// The peer's inbound actor.
  link_in_actor inbound;
  /// Its bounds.
  link_settings bounds;
  /// Messages waiting for room in the window, oldest first.
  std::deque<message_ref> waiting;
  /// Sequence number of the next batch.
  uint64_t next_seq = 1;
  /// The highest batch acknowledged.
  uint64_t acked = 0;
  /// The message count of each batch sent and not acknowledged, by
  /// sequence number, oldest first.
  std::deque<std::pair<uint64_t, std::size_t>> unacked;
  /// True while dropping (one log line per episode).
  bool dropping = false;
  /// Drops of the current episode.
  uint64_t episode_drops = 0;
  /// Its counters (the inbound fields stay 0).
  link_stats stats;
};

/// The link's handle type with its state.
using link_out_pointer = link_out_actor::stateful_pointer<link_out_state>;

/// Runs the sending end of the link to `peer`, whose inbound actor is
/// `inbound`, within `bounds`.
link_out_actor::behavior_type link_out_impl(link_out_pointer self,
                                            std::string peer,
                                            link_in_actor inbound,
                                            link_settings bounds);

/// What a waiting message costs beyond its topic, payload, key and
/// headers: its record's fixed part, the allocator's share and its slot in
/// the queue. Counted so that `link_buffer_bytes` bounds the memory a
/// stopped peer costs, small messages included.
inline constexpr std::size_t link_message_overhead =
    sizeof(message_record) + 2 * sizeof(void*) + sizeof(message_ref);

/// Returns the bytes a message counts against a link's buffer (and its
/// network batch): its topic, payload, key and headers, plus
/// `link_message_overhead`.
std::size_t link_bytes(const message_ref& msg) noexcept;

} // namespace tb
