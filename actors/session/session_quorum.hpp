// The majority rule on a session's paths (issue 32 point 3, docs/cluster.md
// "Majority rule"): while this node sees fewer than a majority of the
// configured nodes, a session refuses group operations (publishes whose
// route holds a group, joins, acks, requests to a group) with UNAVAILABLE
// (`ec::no_quorum`) naming the counts, and serves fan-out as always. The
// check is one atomic load (`quorum_state`, written by the cluster actor).

#pragma once

#include <string>

#include "actors/session/session_actor.hpp"
#include "routing/error.hpp"

namespace tinybroker::v1 {
class ClientFrame;
} // namespace tinybroker::v1

namespace tb {

/// Returns the refusal of a group operation while this node has no quorum
/// (UNAVAILABLE, "no quorum: this node sees 1 of 3 configured nodes (needs
/// 2); " + `what`) and counts it; no error while it has quorum.
error_info quorum_refusal(session_state& st, const std::string& what);

/// Returns the name of the answer to group deliveries that `frame` holds,
/// as its error frame names the request: "ack", "nack", "reject" (a nack
/// without requeue) or "in_progress".
const char* answer_name(const tinybroker::v1::ClientFrame& frame);

/// Returns the refusal of the client's answer `frame` (ack, nack, reject,
/// in progress) to group deliveries while this node has no quorum, naming
/// the counts and that the deliveries come back after `ack_wait`; no error
/// while it has one.
error_info refuse_answers(session_state& st,
                          const tinybroker::v1::ClientFrame& frame);

/// Without quorum, refuses every accepted message of the client publish
/// `job` whose route holds a group (local or remote), whole: its outcome
/// says why, and it leaves the job (not routed, not checked for duplicates,
/// not counted as published). Fan-out-only messages stay. Messages from a
/// peer's link and a group's dead letters are not client publishes and
/// stay too. Call once the job's routes are known.
void refuse_group_publishes(session_state& st, publish_job& job);

} // namespace tb
