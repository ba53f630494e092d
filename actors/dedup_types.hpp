// The messages of de-duplication (issue 28): a session asks the topic shard
// that owns a topic whether message ids were seen within the window. Part of
// the protocol (actors/protocol.hpp includes it and gives them type IDs).

#pragma once

#include <cstdint>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace tb {

/// A session's question to a topic shard: were these messages' ids seen on
/// their topics within the window? Each message as the 128-bit hash of its
/// topic and msg_id (`make_dedup_key`, actors/topic/dedup_table.hpp) and
/// the id the broker gave it.
struct dedup_query {
  /// Two words per message: the halves of its key.
  std::vector<uint64_t> keys;
  /// The broker id of each message.
  std::vector<uint64_t> ids;
  /// The window of each message's topic in milliseconds (`route`'s); a
  /// message without one (or 0) gets the shard's window.
  std::vector<uint64_t> windows_ms;
};

/// @relates dedup_query
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dedup_query& x) {
  return f(caf::meta::type_name("dedup_query"), x.keys, x.ids, x.windows_ms);
}

/// A topic shard's answer to a `dedup_query`: the duplicates.
struct dedup_reply {
  /// The positions of the duplicates in the query, ascending.
  std::vector<uint32_t> positions;
  /// For each, the broker id of the first message with its msg_id.
  std::vector<uint64_t> first_ids;
};

/// @relates dedup_reply
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dedup_reply& x) {
  return f(caf::meta::type_name("dedup_reply"), x.positions, x.first_ids);
}

} // namespace tb
