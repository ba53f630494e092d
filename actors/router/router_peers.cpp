// The router's side of a cluster (docs/cluster.md): what it does when a peer
// node connects or goes away.
//
// This is the interface the cluster actor (actors/cluster/) drives: it sends
// `peer_up` once it has greeted a peer and waits for the answer before the
// node reports ready, and `peer_down` when the peer's cluster actor is gone.
// Interest propagation fills these in; until then a peer is only logged, and
// a node alone never receives either message.

#include "actors/router/router_actor.hpp"

#include <caf/logger.hpp>

namespace tb {

caf::result<caf::ok_atom> peer_connected(router_pointer self, std::string name,
                                         caf::actor peer_router) {
  CAF_LOG_INFO("peer connected:" << name);
  static_cast<void>(self);
  static_cast<void>(peer_router);
  return caf::ok_atom_v;
}

void peer_disconnected(router_pointer self, const std::string& name) {
  CAF_LOG_INFO("peer gone:" << name);
  static_cast<void>(self);
}

} // namespace tb
