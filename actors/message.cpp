#include "actors/message.hpp"

#include <chrono>

#include <new>

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
