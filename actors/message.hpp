// Messages as the broker holds them: stored once, shared by reference.

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace tb {

/// Application headers of a message, in the order the publisher gave them.
using header_list = std::vector<std::pair<std::string, std::string>>;

/// An accepted message: what was published plus the broker's id and time.
struct message_record {
  /// Broker-wide id, increasing in acceptance order.
  uint64_t id = 0;
  /// Acceptance time in nanoseconds since the Unix epoch.
  int64_t accepted_unix_nanos = 0;
  /// The topic it was published to.
  std::string topic;
  /// The opaque payload.
  std::string payload;
  /// Application headers.
  header_list headers;
  /// The routing key (may be empty).
  std::string key;

  /// Returns the size that counts against `max_message_bytes`: payload,
  /// header names and values, and key.
  std::size_t size_bytes() const noexcept {
    auto total = payload.size() + key.size();
    for (auto& [name, value] : headers)
      total += name.size() + value.size();
    return total;
  }
};

/// @relates message_record
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, message_record& x) {
  return f(caf::meta::type_name("message_record"), x.id, x.accepted_unix_nanos,
           x.topic, x.payload, x.headers, x.key);
}

/// An immutable message shared by every destination that holds it: the
/// payload is stored once however many subscribers or groups get it.
struct message_ref {
  /// The message; never null for a routed message.
  std::shared_ptr<const message_record> ptr;

  /// Accesses the message.
  const message_record& operator*() const noexcept {
    return *ptr;
  }

  /// Accesses the message.
  const message_record* operator->() const noexcept {
    return ptr.get();
  }
};

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

/// @relates message_ref
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, message_ref& x) {
  return inspect_shared(f, x.ptr, "message_ref");
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
