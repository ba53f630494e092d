#include "actors/session/delivery_buffer.hpp"

#include <algorithm>

#include "tinybroker.pb.h"

namespace tb {

namespace {

// Bytes a buffered message counts for: its size plus its topic.
std::size_t footprint(const message_ref& msg) {
  return msg->size_bytes() + msg->topic().size();
}

// How many messages one subscription may put in a frame before the next
// subscription's turn.
constexpr std::size_t turn_quantum = 256;

} // namespace

void to_delivery(const message_record& msg, uint64_t subscription_id,
                 tinybroker::v1::Delivery& out) {
  out.set_subscription_id(subscription_id);
  out.set_message_id(msg.id());
  out.set_accepted_unix_nanos(msg.accepted_unix_nanos());
  auto topic = msg.topic();
  out.set_topic(topic.data(), topic.size());
  auto payload = msg.payload();
  out.set_payload(payload.data(), payload.size());
  if (msg.header_count() > 0) {
    auto& headers = *out.mutable_headers();
    msg.for_each_header([&](std::string_view name, std::string_view value) {
      headers[std::string{name}] = std::string{value};
    });
  }
  auto key = msg.key();
  if (!key.empty())
    out.set_key(key.data(), key.size());
  if (msg.priority() != 0)
    out.set_priority(msg.priority());
}

delivery_buffer::delivery_buffer(std::size_t per_subscription,
                                 std::size_t max_bytes)
    : per_subscription_(std::max<std::size_t>(per_subscription, 1)),
      max_bytes_(max_bytes) {
  // nop
}

bool delivery_buffer::add(uint64_t subscription_id) {
  return subs_.emplace(subscription_id, subscription{}).second;
}

void delivery_buffer::confirm(uint64_t subscription_id) {
  auto i = subs_.find(subscription_id);
  if (i == subs_.end() || i->second.confirmed)
    return;
  i->second.confirmed = true;
  if (!i->second.empty())
    mark_ready(subscription_id, i->second);
}

bool delivery_buffer::remove(uint64_t subscription_id) {
  auto i = subs_.find(subscription_id);
  if (i == subs_.end())
    return false;
  if (i->second.queue)
    for (auto& msg : *i->second.queue)
      buffered_bytes_ -= footprint(msg);
  buffered_ -= i->second.size();
  // Leave nothing ready that cannot be drained: `has_ready()` must not
  // promise a frame (flush would write an empty Deliveries frame).
  if (i->second.queued_ready)
    ready_.erase_first(subscription_id);
  subs_.erase(i);
  // Stale ids in lossy_ are skipped when met.
  return true;
}

void delivery_buffer::mark_ready(uint64_t id, subscription& sub) {
  if (sub.confirmed && !sub.queued_ready) {
    sub.queued_ready = true;
    ready_.push_back(id);
  }
}

void delivery_buffer::note_unreported(uint64_t id, const subscription& sub) {
  if (sub.unreported == 0 && sub.unreported_expired == 0)
    lossy_.push_back(id);
}

void delivery_buffer::drop_expired(uint64_t id, subscription& sub) {
  buffered_bytes_ -= footprint(sub.queue->front());
  --buffered_;
  sub.queue->pop_front();
  note_unreported(id, sub);
  ++sub.unreported_expired;
  ++sub.dropped;
  ++expired_total_;
}

void delivery_buffer::drop_oldest(uint64_t id, subscription& sub) {
  buffered_bytes_ -= footprint(sub.queue->front());
  --buffered_;
  sub.queue->pop_front();
  note_unreported(id, sub);
  ++sub.unreported;
  if (sub.unlogged++ == 0)
    unlogged_.push_back(id);
  ++sub.dropped;
  ++dropped_total_;
}

delivery_buffer::subscription_map::iterator delivery_buffer::largest_queue() {
  auto result = subs_.end();
  for (auto i = subs_.begin(); i != subs_.end(); ++i)
    if (!i->second.empty() &&
        (result == subs_.end() || i->second.size() > result->second.size()))
      result = i;
  return result;
}

bool delivery_buffer::push(uint64_t subscription_id, const message_ref& msg) {
  auto i = subs_.find(subscription_id);
  if (i == subs_.end())
    return false;
  auto& sub = i->second;
  auto size = footprint(msg);
  while (!sub.empty() && sub.size() >= per_subscription_)
    drop_oldest(subscription_id, sub);
  // The session-wide byte bound: the session cannot keep up, so it loses
  // its oldest messages, starting with the subscription that holds most.
  while (buffered_bytes_ + size > max_bytes_) {
    auto victim = largest_queue();
    if (victim == subs_.end())
      break; // nothing buffered: a single message may exceed the bound
    drop_oldest(victim->first, victim->second);
  }
  if (!sub.queue)
    sub.queue.emplace();
  sub.queue->push_back(msg);
  ++buffered_;
  buffered_bytes_ += size;
  mark_ready(subscription_id, sub);
  return true;
}

std::size_t delivery_buffer::drain(tinybroker::v1::ServerFrame& frame,
                                   std::size_t max_messages,
                                   std::size_t max_bytes,
                                   int64_t now_unix_nanos) {
  auto* out = frame.mutable_deliveries()->mutable_deliveries();
  std::size_t moved = 0;
  std::size_t bytes = 0;
  while (!ready_.empty() && moved < max_messages &&
         (moved == 0 || bytes < max_bytes)) {
    auto id = ready_.front();
    ready_.pop_front();
    auto i = subs_.find(id);
    if (i == subs_.end())
      continue;
    auto& sub = i->second;
    sub.queued_ready = false;
    std::size_t turn = 0;
    while (!sub.empty() && moved < max_messages && turn < turn_quantum &&
           (moved == 0 || bytes < max_bytes)) {
      auto& msg = *sub.queue->front();
      if (msg.expires_unix_nanos() <= now_unix_nanos) {
        drop_expired(id, sub);
        continue;
      }
      to_delivery(msg, id, *out->Add());
      auto size = footprint(sub.queue->front());
      bytes += size;
      buffered_bytes_ -= size;
      --buffered_;
      sub.queue->pop_front();
      ++moved;
      ++turn;
    }
    if (!sub.empty())
      mark_ready(id, sub);
  }
  return moved;
}

std::vector<drop_notice> delivery_buffer::take_drop_notices() {
  std::vector<drop_notice> result;
  for (auto id : lossy_) {
    auto i = subs_.find(id);
    if (i == subs_.end())
      continue;
    auto& sub = i->second;
    if (sub.unreported != 0)
      result.push_back(drop_notice{id, sub.unreported, sub.dropped,
                                   drop_reason::slow_subscriber});
    if (sub.unreported_expired != 0)
      result.push_back(drop_notice{id, sub.unreported_expired, sub.dropped,
                                   drop_reason::expired});
    sub.unreported = 0;
    sub.unreported_expired = 0;
  }
  lossy_.clear();
  return result;
}

std::vector<drop_notice> delivery_buffer::take_new_losses() {
  std::vector<drop_notice> result;
  for (auto id : unlogged_) {
    auto i = subs_.find(id);
    if (i == subs_.end() || i->second.unlogged == 0)
      continue;
    result.push_back(drop_notice{id, i->second.unlogged, i->second.dropped});
    i->second.unlogged = 0;
  }
  unlogged_.clear();
  return result;
}

std::size_t delivery_buffer::queued(uint64_t subscription_id) const {
  auto i = subs_.find(subscription_id);
  return i == subs_.end() ? 0 : i->second.size();
}

std::size_t delivery_buffer::allocated_queues() const noexcept {
  std::size_t result = 0;
  for (auto& [id, sub] : subs_)
    result += sub.queue ? 1 : 0;
  return result;
}

} // namespace tb
