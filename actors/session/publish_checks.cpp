// The checks of a published message before the broker takes it: its
// topic, the client's rights, its size and msg_id, and its TTL, delay and
// priority (the first answers of actors/session/session_publish.cpp).

#include <algorithm>
#include <string>

#include "actors/session/session_actor.hpp"
#include "actors/topic/dedup_table.hpp"
#include "routing/topic.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace pb = tinybroker::v1;

// Returns why the TTL, delay and priority of `msg` cannot be taken, or no
// error; fills `timing` (the due time as an offset from `accepted_at`).
error_info check_timing(const session_state& st, const pb::Message& msg,
                        int64_t accepted_at, message_timing& timing) {
  auto topic = [&] {
    return "message to \"" + msg.topic() + "\"";
  };
  if (msg.priority() > max_message_priority)
    return make_error_info(ec::invalid_priority,
                           topic() + " has priority " +
                               std::to_string(msg.priority()) +
                               "; priorities go from 0 to 9");
  if (msg.delay_ms() != 0 && msg.not_before_unix_ms() != 0)
    return make_error_info(ec::invalid_schedule,
                           topic() +
                               " sets both delay_ms and not_before_unix_ms; "
                               "set one of them");
  auto max_delay = st.ctx.limits.max_delay.count();
  int64_t delay = msg.delay_ms();
  if (msg.not_before_unix_ms() != 0)
    delay = std::max<int64_t>(0, msg.not_before_unix_ms() -
                                     accepted_at / 1'000'000);
  if (delay > max_delay)
    return make_error_info(ec::invalid_schedule,
                           topic() + " is due in " + std::to_string(delay) +
                               " ms; the limit is limits.max_delay = " +
                               std::to_string(max_delay) + " ms");
  timing.ttl_ms = msg.ttl_ms();
  timing.delay_ms = static_cast<uint32_t>(delay);
  timing.priority = static_cast<uint8_t>(msg.priority());
  return {};
}

// Returns why `msg` cannot be published, or no error.
error_info check_message(const session_state& st, const pb::Message& msg,
                         const access_grant& grant) {
  if (auto err = validate_topic(msg.topic(), st.ctx.names()))
    return err;
  if (is_system_topic(msg.topic()))
    return make_error_info(ec::reserved_topic,
                           "topic \"" + msg.topic() +
                               "\" belongs to the broker; clients may not "
                               "publish to it");
  if (!may_publish(grant, msg.topic()))
    return make_error_info(ec::permission_denied, describe_client(grant) +
                                                      " may not publish to \"" +
                                                      msg.topic() + "\"");
  auto size = msg.payload().size() + msg.key().size();
  for (auto& [name, value] : msg.headers())
    size += name.size() + value.size();
  if (msg.msg_id().size() > max_msg_id_bytes)
    return make_error_info(ec::invalid_request,
                           "msg_id of a message to \"" + msg.topic() +
                               "\" has " + std::to_string(msg.msg_id().size()) +
                               " bytes; the limit is " +
                               std::to_string(max_msg_id_bytes));
  if (size > st.ctx.limits.max_message_bytes)
    return make_error_info(ec::message_too_large,
                           "message to \"" + msg.topic() + "\" has " +
                               std::to_string(size) + " bytes; the limit is " +
                               std::to_string(st.ctx.limits.max_message_bytes));
  return {};
}

} // namespace tb
