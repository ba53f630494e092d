// Topic names: validation, tokenising and the broker's own `$` space.
//
// A topic is tokens joined by '.': `orders.eu.created` (spec 2). Tokens are
// non-empty and hold no space or other control character, no '.', '*' or
// '>'. A topic whose first token starts with '$' (`$dlq.billing`,
// `$sys.stats`) belongs to the broker. Patterns, which may also hold
// wildcards, live in `pattern.hpp`; both share the rules below.

#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "routing/error.hpp"

namespace tb {

/// The configurable size limits of topic names and patterns (spec 2).
struct name_limits {
  /// The largest allowed name in bytes; longer names are refused.
  std::size_t max_bytes = 255;
  /// The largest allowed number of '.'-separated tokens.
  std::size_t max_tokens = 32;
};

/// Checks that `topic` is a literal topic a client may publish to or name,
/// returning `ec::invalid_topic` with the problem, or no error.
///
/// Whether a client may publish to a `$` topic is a permission question, not
/// a syntax one, so `$dlq.billing` passes here; see `is_system_topic`.
error_info validate_topic(std::string_view topic, const name_limits& limits);

/// Checks a consumer group name: 1 to 128 bytes of `[A-Za-z0-9_-]`
/// (spec 6); `ec::invalid_group_name` names the problem.
error_info validate_group_name(std::string_view name);

/// Returns true if the first token of `name` starts with '$', i.e. the topic
/// or pattern lies in the broker's own space.
bool is_system_topic(std::string_view name);

/// Splits `s` at every '.' into `out`, which is cleared first; the views
/// point into `s`. An empty `s` yields one empty token.
void split_tokens(std::string_view s, std::vector<std::string_view>& out);

/// Shared internals of `validate_topic` and `validate_pattern`.
namespace detail {

/// Checks `name` against the token rules and `limits`; wildcard tokens are
/// allowed (as patterns allow them) only if `is_pattern` is true.
error_info validate_name(std::string_view name, const name_limits& limits,
                         bool is_pattern);

} // namespace detail

} // namespace tb
