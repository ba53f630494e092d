// Messages as the broker holds them: stored once, shared by reference.

#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/sec.hpp>
#include <caf/serializer.hpp>

namespace tb {

/// Application headers of a message, in the order the publisher gave them.
using header_list = std::vector<std::pair<std::string, std::string>>;

class message_ref;

/// Returns the wall clock's time in nanoseconds since the Unix epoch: the
/// clock of message acceptance, TTL and due times.
int64_t now_unix_nanos();

/// When a message may be delivered, how long it stays wanted, and how urgent
/// it is (issue 29): what a publisher asked for, as the broker keeps it.
/// Times are offsets from the acceptance time, so that they fit in 32 bits.
struct message_timing {
  /// Time to live in milliseconds from when it becomes deliverable (its
  /// acceptance, or its due time when delayed); 0 = none.
  uint32_t ttl_ms = 0;
  /// Milliseconds from acceptance to its due time; 0 = deliverable at once.
  uint32_t delay_ms = 0;
  /// 0 (default) to 9; higher is delivered first by groups.
  uint8_t priority = 0;
};

/// The highest message priority.
constexpr uint8_t max_message_priority = 9;

/// The longest topic a record can hold (its size is kept in 16 bits);
/// `limits.max_topic_bytes` may not exceed it.
constexpr std::size_t max_record_topic_bytes = 65535;

/// An accepted message: what was published plus the broker's id and time.
/// Immutable, and stored in one allocation: this fixed part (48 bytes: 40
/// before issue 29, plus 8 for TTL and delay; the priority shares the word
/// of the topic's size) followed by the bytes of topic, payload, key and
/// headers. Made only by `message_record::make`, shared only through
/// `message_ref`.
class message_record {
public:
  message_record(const message_record&) = delete;
  message_record& operator=(const message_record&) = delete;

  /// Makes a message of `topic`, `payload`, `key` and `headers` (a range of
  /// pairs of strings, such as a `header_list` or a protobuf map).
  template <class Headers>
  static message_ref make(uint64_t id, int64_t accepted_unix_nanos,
                          std::string_view topic, std::string_view payload,
                          std::string_view key, const Headers& headers,
                          message_timing timing = {});

  /// Makes a message without headers.
  static message_ref make(uint64_t id, int64_t accepted_unix_nanos,
                          std::string_view topic, std::string_view payload,
                          std::string_view key = {});

  /// Broker-wide id, increasing in acceptance order.
  uint64_t id() const noexcept {
    return id_;
  }

  /// Acceptance time in nanoseconds since the Unix epoch.
  int64_t accepted_unix_nanos() const noexcept {
    return accepted_unix_nanos_;
  }

  /// Its TTL, delay and priority.
  message_timing timing() const noexcept {
    return {ttl_ms_, delay_ms_, priority_};
  }

  /// Time to live in milliseconds from when it becomes deliverable; 0 = none.
  uint32_t ttl_ms() const noexcept {
    return ttl_ms_;
  }

  /// Milliseconds from acceptance to its due time; 0 = at once.
  uint32_t delay_ms() const noexcept {
    return delay_ms_;
  }

  /// Its priority, 0 to 9.
  uint8_t priority() const noexcept {
    return priority_;
  }

  /// When it becomes deliverable, in Unix nanoseconds: its acceptance time
  /// plus its delay.
  int64_t due_unix_nanos() const noexcept {
    return accepted_unix_nanos_ + int64_t{delay_ms_} * 1'000'000;
  }

  /// When it expires, in Unix nanoseconds (its due time plus its TTL); the
  /// largest int64 when it has no TTL.
  int64_t expires_unix_nanos() const noexcept {
    return ttl_ms_ == 0 ? INT64_MAX
                        : due_unix_nanos() + int64_t{ttl_ms_} * 1'000'000;
  }

  /// The topic it was published to.
  std::string_view topic() const noexcept {
    return {data(), topic_size_};
  }

  /// The opaque payload.
  std::string_view payload() const noexcept {
    return {data() + topic_size_, payload_size_};
  }

  /// The routing key (may be empty).
  std::string_view key() const noexcept {
    return {data() + topic_size_ + payload_size_, key_size_};
  }

  /// Returns how many application headers it has.
  std::size_t header_count() const noexcept {
    return header_count_;
  }

  /// Calls `fn(name, value)` for each header, in publish order.
  template <class F>
  void for_each_header(F fn) const;

  /// Returns the value of the first header called `name`, if any.
  std::optional<std::string_view> header(std::string_view name) const;

  /// Returns a copy of the headers.
  header_list headers() const;

  /// Writes the message to `sink` as it crosses nodes: its fixed fields,
  /// then topic, payload, key and headers as one run of bytes, as the
  /// record holds them (no copy into strings; little-endian sizes).
  caf::error save(caf::serializer& sink) const;

  /// Reads what `save` wrote into a fresh record; an error, and `out`
  /// untouched, if the sizes do not fit (a topic over 64 KiB, a priority
  /// over 9, more than `max_wire_bytes`, or headers that overrun).
  static caf::error load(caf::deserializer& source, message_ref& out);

  /// The most bytes of topic, payload, key and headers a record read from
  /// another node may hold (a bound against a corrupt size).
  static constexpr std::size_t max_wire_bytes = std::size_t{1} << 30;

  /// Returns the size that counts against `max_message_bytes`: payload,
  /// header names and values, and key.
  std::size_t size_bytes() const noexcept {
    return payload_size_ + key_size_ + header_bytes_ -
           header_count_ * 2 * sizeof(uint32_t);
  }

private:
  friend class message_ref;

  message_record() = default;

  const char* data() const noexcept {
    return reinterpret_cast<const char*>(this + 1);
  }

  char* data() noexcept {
    return reinterpret_cast<char*>(this + 1);
  }

  // Allocates a record with room for `extra` bytes behind it.
  static message_record* allocate(std::size_t extra);

  // Writes a header (two 32-bit sizes, then the bytes) at `out`.
  static char* put_header(char* out, std::string_view name,
                          std::string_view value) noexcept;

  // Writes everything but the headers and returns where they go.
  static char* put_fixed(message_record* rec, uint64_t id, int64_t nanos,
                         std::string_view topic, std::string_view payload,
                         std::string_view key) noexcept;

  mutable std::atomic<uint32_t> refs_{1};
  uint16_t topic_size_ = 0;
  uint8_t priority_ = 0;
  // One byte of padding here; the record stays 48 bytes (message.cpp).
  uint32_t payload_size_ = 0;
  uint32_t key_size_ = 0;
  uint32_t header_bytes_ = 0;
  uint32_t header_count_ = 0;
  uint64_t id_ = 0;
  int64_t accepted_unix_nanos_ = 0;
  uint32_t ttl_ms_ = 0;
  uint32_t delay_ms_ = 0;
};

/// An immutable message shared by every destination that holds it: the
/// payload is stored once however many subscribers or groups get it. One
/// pointer wide; the count of references lives in the record.
class message_ref {
public:
  /// An empty reference.
  message_ref() noexcept = default;

  /// Shares the message of `other`.
  message_ref(const message_ref& other) noexcept : ptr_(other.ptr_) {
    if (ptr_ != nullptr)
      ptr_->refs_.fetch_add(1, std::memory_order_relaxed);
  }

  /// Takes the message of `other`, which becomes empty.
  message_ref(message_ref&& other) noexcept : ptr_(other.ptr_) {
    other.ptr_ = nullptr;
  }

  /// Shares the message of `other`.
  message_ref& operator=(const message_ref& other) noexcept {
    message_ref copy{other};
    std::swap(ptr_, copy.ptr_);
    return *this;
  }

  /// Takes the message of `other`.
  message_ref& operator=(message_ref&& other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }

  /// Drops this reference; the last one frees the message.
  ~message_ref() {
    if (ptr_ != nullptr &&
        ptr_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1)
      release(ptr_);
  }

  /// Returns true unless empty.
  explicit operator bool() const noexcept {
    return ptr_ != nullptr;
  }

  /// Accesses the message.
  const message_record& operator*() const noexcept {
    return *ptr_;
  }

  /// Accesses the message.
  const message_record* operator->() const noexcept {
    return ptr_;
  }

  /// Returns the message, or null.
  const message_record* get() const noexcept {
    return ptr_;
  }

private:
  friend class message_record;

  explicit message_ref(message_record* fresh) noexcept : ptr_(fresh) {
    // nop
  }

  static void release(const message_record* rec) noexcept;

  const message_record* ptr_ = nullptr;
};

template <class F>
void message_record::for_each_header(F fn) const {
  const char* pos = key().data() + key_size_;
  for (uint32_t i = 0; i < header_count_; ++i) {
    uint32_t sizes[2];
    std::memcpy(sizes, pos, sizeof(sizes));
    pos += sizeof(sizes);
    fn(std::string_view{pos, sizes[0]},
       std::string_view{pos + sizes[0], sizes[1]});
    pos += sizes[0] + sizes[1];
  }
}

template <class Headers>
message_ref message_record::make(uint64_t id, int64_t accepted_unix_nanos,
                                 std::string_view topic,
                                 std::string_view payload, std::string_view key,
                                 const Headers& headers,
                                 message_timing timing) {
  std::size_t header_bytes = 0;
  uint32_t count = 0;
  for (auto& [name, value] : headers) {
    header_bytes += 2 * sizeof(uint32_t) + name.size() + value.size();
    ++count;
  }
  auto* rec =
      allocate(topic.size() + payload.size() + key.size() + header_bytes);
  auto* out = put_fixed(rec, id, accepted_unix_nanos, topic, payload, key);
  for (auto& [name, value] : headers)
    out = put_header(out, name, value);
  rec->header_bytes_ = static_cast<uint32_t>(header_bytes);
  rec->header_count_ = count;
  rec->ttl_ms_ = timing.ttl_ms;
  rec->delay_ms_ = timing.delay_ms;
  rec->priority_ = timing.priority;
  return message_ref{rec};
}

/// @relates message_ref
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, message_ref& x) {
  // Across nodes (CAF's serializers): the record's bytes in one run.
  if constexpr (std::is_base_of_v<caf::serializer, Inspector>) {
    if (!x)
      return message_record::make(0, 0, {}, {})->save(f);
    return x->save(f);
  } else if constexpr (std::is_base_of_v<caf::deserializer, Inspector>) {
    return message_record::load(f, x);
  } else {
    // Other inspectors (to_string): field by field. CAF 0.17 loads only
    // through deserializers.
    static_assert(Inspector::reads_state, "message_ref loads by `load`");
    uint64_t id = x ? x->id() : 0;
    int64_t nanos = x ? x->accepted_unix_nanos() : 0;
    std::string topic{x ? x->topic() : std::string_view{}};
    std::string payload{x ? x->payload() : std::string_view{}};
    std::string key{x ? x->key() : std::string_view{}};
    auto headers = x ? x->headers() : header_list{};
    auto timing = x ? x->timing() : message_timing{};
    return f(caf::meta::type_name("message_ref"), id, nanos, topic, payload,
             key, headers, timing.ttl_ms, timing.delay_ms, timing.priority);
  }
}

/// Inspects a shared immutable value by its content: saving writes the
/// value, loading makes a fresh shared value.
template <class T, class Inspector>
typename Inspector::result_type
inspect_shared(Inspector& f, std::shared_ptr<const T>& ptr, const char* name) {
  if constexpr (Inspector::reads_state) {
    static const T empty{};
    return f(caf::meta::type_name(name), const_cast<T&>(ptr ? *ptr : empty));
  } else {
    auto fresh = std::make_shared<T>();
    ptr = fresh;
    return f(caf::meta::type_name(name), *fresh);
  }
}

/// One message for one fan-out subscription.
struct fanout_item {
  /// The message.
  message_ref message;
  /// The subscription, within the receiving session.
  uint64_t subscription_id = 0;
};

/// @relates fanout_item
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fanout_item& x) {
  return f(caf::meta::type_name("fanout_item"), x.message, x.subscription_id);
}

/// The fan-out deliveries one publish batch makes to one session, in publish
/// order.
struct fanout_batch {
  /// The deliveries.
  std::vector<fanout_item> items;
};

/// @relates fanout_batch
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fanout_batch& x) {
  return f(caf::meta::type_name("fanout_batch"), x.items);
}

} // namespace tb
