// The receiving end of a link from one peer node (docs/cluster.md,
// "Fan-out across nodes").
//
// It hands each network batch to its delivery session, a session actor
// without a client that routes messages from a peer to local fan-out
// subscribers only (never to a link, so nothing goes two hops, and never to
// a group: groups are not interest), and acks the batch once the session
// routed it, which opens the peer's window. One session, in arrival order:
// the peer's publishers keep their order here too, also while the session
// resolves a route it has not cached.
//
//   peer's link_out --link_frame(seq)--> link_in --remote--> delivery session
//          ^                                |   <----ok-----      |
//          +------------link_ack(seq)-------+           local subscribers

#pragma once

#include <cstdint>
#include <string>

#include <caf/stateful_actor.hpp>

#include "actors/broker_context.hpp"
#include "actors/protocol.hpp"

namespace tb {

/// State of a link's receiving end.
struct link_in_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.link_in";

  /// The peer's node name (for logs).
  std::string peer;
  /// The session that routes the peer's messages to local subscribers.
  session_actor delivery;
  /// Its counters (the outbound fields stay 0).
  link_stats stats;
};

/// The link's handle type with its state.
using link_in_pointer = link_in_actor::stateful_pointer<link_in_state>;

/// Runs the receiving end of the link from `peer`, delivering through a
/// session made with `ctx`.
link_in_actor::behavior_type link_in_impl(link_in_pointer self,
                                          std::string peer, broker_context ctx);

} // namespace tb
