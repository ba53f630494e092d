// Opening a Session stream, the same on both transports (the callback
// reactor and the completion-queue stream): the bridge, the registry's
// consent, the log line, the session actor and the first read.

#pragma once

#include <memory>
#include <string>

#include <caf/actor_system.hpp>

#include "actors/broker_context.hpp"
#include "auth/token_table.hpp"
#include "net/log_actor.hpp"
#include "net/session_stream.hpp"
#include "routing/error.hpp"

namespace tb {

class session_bridge;
class session_registry;

/// What every Session stream is opened with: the broker's actor system and
/// context, the registry of live streams and the refusal log. Owned by the
/// service; outlives every stream.
struct session_parts {
  /// Spawns the session actors.
  caf::actor_system* system = nullptr;
  /// What each session actor is spawned with.
  broker_context context;
  /// The live streams (bounded by `limits.max_sessions`).
  session_registry* registry = nullptr;
  /// Where refusals are reported.
  log_actor logger;
};

/// Creates the bridge of `stream`, whose client is `peer`, authenticated
/// as `who` (its credential and token name), named `client_name`.
std::shared_ptr<session_bridge> make_session_bridge(session_stream* stream,
                                                    std::string peer,
                                                    const auth_outcome& who,
                                                    std::string client_name);

/// Registers `bridge`, logs `session opened`, spawns its session actor with
/// `grant` and starts the first read; or returns why not (the registry
/// refused: shutdown, `max_sessions`), already reported to the refusal log,
/// and the caller ends the stream with its status.
error_info open_session(const session_parts& parts,
                        const std::shared_ptr<session_bridge>& bridge,
                        const access_grant& grant);

} // namespace tb
