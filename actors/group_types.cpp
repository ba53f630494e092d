// The wire form of a group's deliveries to a session on another node
// (docs/cluster.md, "Types that cross nodes").
//
// A batch is its count (4 bytes), then per delivery:
//
//   21 bytes   subscription id (8), delivery id (8), attempt (4), flags (1:
//              bit 0 set if a reply target follows)
//   record     the message, as message_record::save writes it
//   [target]   the reply target, through CAF's serializer (it holds an actor
//              handle, which CAF registers as a proxy on the reading node)
//
// Three runs of raw bytes per delivery instead of eight fields, each of
// which cost CAF's serializer an error made and destroyed.

#include "actors/group_types.hpp"

#include <algorithm>
#include <cstring>

namespace tb {

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "deliveries cross nodes in their own byte order");

// The bytes of a delivery's head: two ids, the attempt, the flags.
constexpr std::size_t delivery_head_bytes = 8 + 8 + 4 + 1;

// The flag of a delivery whose reply target follows its record.
constexpr uint8_t delivery_has_reply = 1;

// The most deliveries a batch reserves room for before it reads them: a
// count read from a malformed buffer must not allocate at once.
constexpr uint32_t delivery_reserve_limit = 1024;

} // namespace

caf::error save_deliveries(caf::serializer& sink, group_delivery_batch& x) {
  auto count = static_cast<uint32_t>(x.items.size());
  if (auto err = sink.apply_raw(sizeof(count), &count))
    return err;
  for (auto& item : x.items) {
    char head[delivery_head_bytes];
    std::memcpy(head, &item.subscription_id, 8);
    std::memcpy(head + 8, &item.delivery_id, 8);
    std::memcpy(head + 16, &item.attempt, 4);
    head[20] = static_cast<char>(item.reply ? delivery_has_reply : 0);
    if (auto err = sink.apply_raw(sizeof(head), head))
      return err;
    if (auto err = inspect(sink, item.message))
      return err;
    if (item.reply)
      if (auto err = inspect(sink, item.reply))
        return err;
  }
  return caf::none;
}

caf::error load_deliveries(caf::deserializer& source, group_delivery_batch& x) {
  x.items.clear();
  uint32_t count = 0;
  if (auto err = source.apply_raw(sizeof(count), &count))
    return err;
  std::vector<group_delivery> items;
  items.reserve(std::min(count, delivery_reserve_limit));
  for (uint32_t i = 0; i < count; ++i) {
    char head[delivery_head_bytes];
    if (auto err = source.apply_raw(sizeof(head), head))
      return err;
    auto& item = items.emplace_back();
    std::memcpy(&item.subscription_id, head, 8);
    std::memcpy(&item.delivery_id, head + 8, 8);
    std::memcpy(&item.attempt, head + 16, 4);
    auto flags = static_cast<uint8_t>(head[20]);
    if ((flags & ~delivery_has_reply) != 0)
      return caf::make_error(caf::sec::invalid_argument,
                             "group_delivery: unknown flags");
    if (auto err = inspect(source, item.message))
      return err;
    if (flags & delivery_has_reply)
      if (auto err = inspect(source, item.reply))
        return err;
  }
  x.items = std::move(items);
  return caf::none;
}

} // namespace tb
