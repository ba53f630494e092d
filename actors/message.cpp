#include "actors/message.hpp"

#include <chrono>
#include <cstring>
#include <new>
#include <typeinfo>

#include <caf/binary_deserializer.hpp>

#include "config/broker_config.hpp"

namespace tb {

int64_t now_unix_nanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

// No header list: for `make` without headers.
const header_list no_headers;

// Copies `bytes` to `out` and returns the end (no memcpy of null when
// empty).
char* put_bytes(char* out, std::string_view bytes) noexcept {
  if (!bytes.empty())
    std::memcpy(out, bytes.data(), bytes.size());
  return out + bytes.size();
}

} // namespace

message_ref message_record::make(uint64_t id, int64_t accepted_unix_nanos,
                                 std::string_view topic,
                                 std::string_view payload,
                                 std::string_view key) {
  return make(id, accepted_unix_nanos, topic, payload, key, no_headers);
}

std::optional<std::string_view>
message_record::header(std::string_view name) const {
  std::optional<std::string_view> result;
  for_each_header([&](std::string_view n, std::string_view v) {
    if (!result && n == name)
      result = v;
  });
  return result;
}

header_list message_record::headers() const {
  header_list result;
  result.reserve(header_count_);
  for_each_header([&](std::string_view n, std::string_view v) {
    result.emplace_back(std::string{n}, std::string{v});
  });
  return result;
}

message_record* message_record::allocate(std::size_t extra) {
  auto* mem = ::operator new(sizeof(message_record) + extra);
  return new (mem) message_record();
}

char* message_record::put_header(char* out, std::string_view name,
                                 std::string_view value) noexcept {
  uint32_t sizes[2] = {static_cast<uint32_t>(name.size()),
                       static_cast<uint32_t>(value.size())};
  std::memcpy(out, sizes, sizeof(sizes));
  return put_bytes(put_bytes(out + sizeof(sizes), name), value);
}

char* message_record::put_fixed(message_record* rec, uint64_t id, int64_t nanos,
                                std::string_view topic,
                                std::string_view payload,
                                std::string_view key) noexcept {
  rec->id_ = id;
  rec->accepted_unix_nanos_ = nanos;
  rec->topic_size_ = static_cast<uint16_t>(topic.size());
  rec->payload_size_ = static_cast<uint32_t>(payload.size());
  rec->key_size_ = static_cast<uint32_t>(key.size());
  return put_bytes(put_bytes(put_bytes(rec->data(), topic), payload), key);
}

namespace {

// The fixed fields of a record as they cross nodes, in wire order,
// little-endian: 8 + 8 + 7 x 4 + 1 = 45 bytes.
struct wire_head {
  uint64_t id = 0;
  int64_t nanos = 0;
  uint32_t topic_size = 0;
  uint32_t payload_size = 0;
  uint32_t key_size = 0;
  uint32_t header_bytes = 0;
  uint32_t header_count = 0;
  uint32_t ttl = 0;
  uint32_t delay = 0;
  uint8_t priority = 0;

  // Returns the bytes of topic, payload, key and headers behind the head.
  std::size_t tail() const noexcept {
    return std::size_t{topic_size} + payload_size + key_size + header_bytes;
  }
};

constexpr std::size_t wire_head_bytes = 8 + 8 + 7 * 4 + 1;

// Calls `fn` on each field of `head`, in wire order.
template <class Head, class F>
void for_each_field(Head& head, F fn) {
  fn(head.id);
  fn(head.nanos);
  fn(head.topic_size);
  fn(head.payload_size);
  fn(head.key_size);
  fn(head.header_bytes);
  fn(head.header_count);
  fn(head.ttl);
  fn(head.delay);
  fn(head.priority);
}

// Returns true if `count` headers (two 32-bit sizes and the bytes each) fill
// exactly the `bytes` bytes at `pos`.
bool headers_fit(const char* pos, std::size_t bytes, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t sizes[2];
    if (bytes < sizeof(sizes))
      return false;
    std::memcpy(sizes, pos, sizeof(sizes));
    pos += sizeof(sizes);
    bytes -= sizeof(sizes);
    auto both = std::size_t{sizes[0]} + sizes[1];
    if (both > bytes)
      return false;
    pos += both;
    bytes -= both;
  }
  return bytes == 0;
}

} // namespace

caf::error message_record::save(caf::serializer& sink) const {
  // Two runs of raw bytes, not a field at a time: CAF's serializer made
  // and destroyed an error per field and a string per part (most of a
  // link's cost per message; docs/cluster.md).
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                "records cross nodes in their own byte order");
  wire_head head;
  head.id = id_;
  head.nanos = accepted_unix_nanos_;
  head.topic_size = topic_size_;
  head.payload_size = payload_size_;
  head.key_size = key_size_;
  head.header_bytes = header_bytes_;
  head.header_count = header_count_;
  head.ttl = ttl_ms_;
  head.delay = delay_ms_;
  head.priority = priority_;
  char bytes[wire_head_bytes];
  auto* out = bytes;
  for_each_field(head, [&](const auto& x) {
    std::memcpy(out, &x, sizeof(x));
    out += sizeof(x);
  });
  if (auto err = sink.apply_raw(sizeof(bytes), bytes))
    return err;
  if (head.tail() == 0)
    return caf::none;
  // apply_raw takes a mutable pointer; a serializer only reads it.
  return sink.apply_raw(head.tail(), const_cast<char*>(data()));
}

caf::error message_record::load(caf::deserializer& source, message_ref& out) {
  char bytes[wire_head_bytes];
  if (auto err = source.apply_raw(sizeof(bytes), bytes))
    return err;
  wire_head head;
  const char* in = bytes;
  for_each_field(head, [&](auto& x) {
    std::memcpy(&x, in, sizeof(x));
    in += sizeof(x);
  });
  auto tail = head.tail();
  if (head.topic_size > max_record_topic_bytes ||
      head.priority > max_message_priority || tail > max_wire_bytes)
    return caf::make_error(caf::sec::invalid_argument,
                           "message_ref: topic, priority or size out of range");
  // A peer's message is read by CAF's binary deserializer: sizes beyond its
  // bytes are refused before the record is allocated (fuzz_wire).
  if (typeid(source) == typeid(caf::binary_deserializer) &&
      tail > static_cast<caf::binary_deserializer&>(source).remaining())
    return caf::make_error(caf::sec::end_of_stream,
                           "message_ref: sizes beyond the bytes received");
  auto* rec = allocate(tail);
  message_ref result{rec};
  rec->id_ = head.id;
  rec->accepted_unix_nanos_ = head.nanos;
  rec->topic_size_ = static_cast<uint16_t>(head.topic_size);
  rec->payload_size_ = head.payload_size;
  rec->key_size_ = head.key_size;
  rec->header_bytes_ = head.header_bytes;
  rec->header_count_ = head.header_count;
  rec->ttl_ms_ = head.ttl;
  rec->delay_ms_ = head.delay;
  rec->priority_ = head.priority;
  if (tail > 0)
    if (auto err = source.apply_raw(tail, rec->data()))
      return err;
  if (!headers_fit(rec->data() + tail - head.header_bytes, head.header_bytes,
                   head.header_count))
    return caf::make_error(caf::sec::invalid_argument,
                           "message_ref: headers overrun their bytes");
  out = std::move(result);
  return caf::none;
}

void message_ref::release(const message_record* rec) noexcept {
  rec->~message_record();
  ::operator delete(const_cast<message_record*>(rec));
}

static_assert(sizeof(message_record) == 48, "the fixed part grew");
static_assert(sizeof(message_ref) == sizeof(void*), "a reference grew");
static_assert(max_record_topic_bytes == max_topic_bytes_limit,
              "the config must bound topics to what a record holds");
static_assert(max_delay_limit_ms <= UINT32_MAX,
              "the config must bound delays to what a record holds");

} // namespace tb
