#include "actors/protocol.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>

namespace tb {

void add_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::tinybroker>();
}

namespace {

constexpr caf::atom_value error_category = caf::atom("tinybroker");

} // namespace

caf::error make_caf_error(ec code, std::string text) {
  return caf::error{static_cast<uint8_t>(code), error_category,
                    caf::make_message(std::move(text))};
}

error_info to_error_info(const caf::error& err) {
  if (err.category() == error_category) {
    std::string text;
    if (err.context().match_elements<std::string>())
      text = err.context().get_as<std::string>(0);
    return error_info{static_cast<ec>(err.code()), std::move(text)};
  }
  return error_info{ec::internal, caf::to_string(err)};
}

} // namespace tb
