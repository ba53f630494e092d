// What a group actor does with a message it gives up on or takes back: a
// dead letter to the group's dead letter topic, with headers saying where it
// came from and why (spec 6), and the requeue at the head of the queue that
// dead-letters a message once it used up its deliveries.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "actors/group/group_actor.hpp"
#include "config/group_checks.hpp"

namespace tb {

namespace {

// Sets header `name` to `value`, replacing an earlier value.
void set_header(header_list& headers, std::string_view name,
                std::string value) {
  for (auto& [key, old] : headers)
    if (key == name) {
      old = std::move(value);
      return;
    }
  headers.emplace_back(std::string{name}, std::move(value));
}

// Returns the value of header `name`, or nothing.
const std::string* find_header(const header_list& headers,
                               std::string_view name) {
  for (auto& [key, value] : headers)
    if (key == name)
      return &value;
  return nullptr;
}

// Returns true if `path` (the groups a dead letter passed through, joined
// by ',') names `group`.
bool path_names(std::string_view path, std::string_view group) {
  while (!path.empty()) {
    auto comma = path.find(',');
    if (path.substr(0, comma) == group)
      return true;
    if (comma == std::string_view::npos)
      break;
    path.remove_prefix(comma + 1);
  }
  return false;
}

// Publishes a message that leaves the group unacked to the dead letter
// topic, with headers saying where it came from and why. A dead letter that
// is dead-lettered again keeps its first original topic and id; one that
// already passed through this group is dropped instead, so that groups
// whose dead letter topics match each other's patterns cannot loop
// (docs/semantics.md).
} // namespace

void dead_letter(group_pointer self, const group_ledger::held& held,
                 const char* reason) {
  auto& st = self->state;
  note_removed(self, held.key);
  auto log_line = [&](std::string_view topic, const char* because) {
    auto count =
        topic.empty() ? st.counters.dropped : st.counters.dead_lettered;
    if (auto wake = st.dead_letter_lines.record(
            {reason, topic, because, held.attempts, count},
            self->clock().now()))
      self->delayed_send(self, *wake, log_tick_atom_v);
  };
  if (st.settings.dead_letter == "none" || !st.ctx.dead_letters) {
    ++st.counters.dropped;
    log_line({}, "dead_letter_none");
    return;
  }
  auto& original = *held.msg;
  auto headers = original.headers();
  auto* path = find_header(headers, dead_letter_headers::path);
  if (path != nullptr && path_names(*path, st.group)) {
    ++st.counters.dropped;
    log_line({}, "dead_letter_loop");
    return;
  }
  auto new_path = path == nullptr ? st.group : *path + "," + st.group;
  if (find_header(headers, dead_letter_headers::original_topic) == nullptr) {
    headers.emplace_back(dead_letter_headers::original_topic,
                         std::string{original.topic()});
    headers.emplace_back(dead_letter_headers::original_id,
                         std::to_string(original.id()));
  }
  set_header(headers, dead_letter_headers::group, st.group);
  set_header(headers, dead_letter_headers::attempts,
             std::to_string(held.attempts));
  set_header(headers, dead_letter_headers::reason, reason);
  set_header(headers, dead_letter_headers::path, std::move(new_path));
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  ++st.counters.dead_lettered;
  auto topic = dead_letter_topic(st.group, st.settings);
  log_line(topic, "");
  self->send(st.ctx.dead_letters, dlq_atom_v,
             message_record::make(st.ctx.message_ids->reserve(1), nanos, topic,
                                  original.payload(), original.key(), headers));
}

// Holds a message again for redelivery at the head of the queue, or dead
// letters it when it used up its deliveries.
bool used_up(group_pointer self, const group_ledger::held& held) {
  auto limit = self->state.settings.max_deliveries;
  if (limit == 0 || held.attempts < limit)
    return false;
  // A member that fails every delivery (stalled, crashing on it) must not
  // use up a message that another member could take: it gets one more
  // attempt there (spec 6, docs/semantics.md).
  return held.tried_count() >= 2 || !has_new_receiver(self, held);
}

void requeue(group_pointer self, group_ledger::held held) {
  if (has_expired(self, held)) {
    expire(self, held);
    return;
  }
  if (used_up(self, held)) {
    dead_letter(self, held, "max_deliveries");
    return;
  }
  self->state.ledger.push_front(std::move(held));
}

// Holds messages again at the head of the queue, the first of `msgs` first
// in line, dead-lettering (in their order) those that used up their
// deliveries.
void requeue_in_order(group_pointer self,
                      std::vector<group_ledger::held> msgs) {
  std::vector<group_ledger::held> again;
  for (auto& held : msgs)
    if (has_expired(self, held))
      expire(self, held);
    else if (used_up(self, held))
      dead_letter(self, held, "max_deliveries");
    else
      again.push_back(std::move(held));
  for (auto i = again.rbegin(); i != again.rend(); ++i)
    self->state.ledger.push_front(std::move(*i));
}

} // namespace tb
