#include "net/session_open.hpp"

#include <vector>

#include <caf/actor_registry.hpp>

#include "actors/session/session_actor.hpp"
#include "net/grpc_settings.hpp"
#include "net/log.hpp"
#include "net/session_bridge.hpp"
#include "net/session_reactor.hpp"

namespace tb {

namespace {

// Client frames handed to the session actor before reading pauses.
constexpr size_t session_open_max_unread_frames = 16;

} // namespace

std::shared_ptr<session_bridge> make_session_bridge(session_stream* stream,
                                                    std::string peer,
                                                    const auth_outcome& who,
                                                    std::string client_name) {
  return std::make_shared<session_bridge>(
      stream, session_open_max_unread_frames, std::move(peer), who.credential,
      who.grant.token, std::move(client_name));
}

error_info open_session(const session_parts& parts,
                        const std::shared_ptr<session_bridge>& bridge,
                        const access_grant& grant) {
  if (auto err = parts.registry->add(bridge)) {
    refusal_reporter{parts.logger, "Session", bridge->peer()}(err);
    return err;
  }
  // Its end is logged by the session actor, with its counts. At debug, the
  // number of running actors lets a test (or an operator) see that actors
  // of ended sessions and dropped subscriptions do not pile up.
  // The fields refer to these strings.
  auto peer = bridge->peer();
  auto name = bridge->client_name();
  std::vector<log::field> fields{{"peer", peer}};
  if (!name.empty())
    fields.emplace_back("name", name);
  if (log::enabled(log::level::debug))
    fields.emplace_back("actors", parts.system->registry().running());
  log::write(log::level::info, "session opened", fields);
  bridge->set_max_frame_bytes(grpc_frame_limit(parts.context.limits));
  auto actor =
      parts.system->spawn(session_actor_impl, parts.context,
                          std::static_pointer_cast<frame_sink>(bridge), grant);
  bridge->start(std::move(actor));
  return {};
}

} // namespace tb
