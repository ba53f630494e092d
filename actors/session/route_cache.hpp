// A session's bounded cache of topic routes.

#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/protocol.hpp"

namespace tb {

/// Maps topic names to the routes a publishing session caches, least
/// recently used first out.
///
/// Every cached topic keeps its topic actor alive, so the cache is bounded
/// by size and by idleness: `sweep()` evicts entries unused since the
/// previous sweep. Callers tell the router about each evicted topic.
class route_cache {
public:
  /// Creates a cache holding at most `capacity` routes (at least 1).
  explicit route_cache(std::size_t capacity);

  /// Returns the cached route of `topic` and marks it used, or null.
  const route_ref* find(std::string_view topic);

  /// Caches `route` under its topic, unless a newer version is cached;
  /// returns the topic evicted to make room, if any.
  std::optional<std::string> insert(route_ref route);

  /// Replaces the route of an already cached topic unless the cached one is
  /// newer (updates may arrive after a newer route did); returns false if
  /// the topic is not cached (the update is then ignored).
  bool update(const route_ref& route);

  /// Evicts every entry not used since the previous sweep and returns their
  /// topics; the remaining entries start the next period unused.
  std::vector<std::string> sweep();

  /// Evicts every entry and returns their topics.
  std::vector<std::string> clear();

  /// Returns the number of cached routes.
  std::size_t size() const noexcept {
    return index_.size();
  }

private:
  struct entry {
    route_ref route;
    bool used = true;
  };

  using entry_list = std::list<entry>;

  std::size_t capacity_;
  entry_list entries_; // most recently used first
  std::unordered_map<std::string, entry_list::iterator> index_;
  // Holds the topic of a lookup (C++17 maps take no string_view keys), so
  // that a lookup allocates nothing once it has grown.
  std::string probe_;
};

} // namespace tb
