#include "actors/protocol.hpp"

#include <caf/actor_system_config.hpp>

namespace tb {

void add_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::tinybroker>();
}

} // namespace tb
