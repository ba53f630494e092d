// Whether a set of allowed patterns covers a subscription pattern: the
// subscribe check of token permissions (spec 10).

#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tb {

/// Returns true if every topic `pattern` can match is matched by at least
/// one of `allowed` (which may cover it together, as `orders.*` and
/// `orders.*.>` together cover `orders.>`). Assumes valid patterns.
///
/// The check is exact, under the matching rules of `pattern_matches`
/// (including that a first-token wildcard never matches a `$` topic):
/// `orders.>` is not covered by `orders.eu.>` alone, `orders.eu.*` is.
///
/// Why a token-by-token walk is enough: at a position where `pattern` has
/// `*`, a token that no allowed pattern names literally is the hardest case
/// (every literal token is matched by at least the allowed patterns that
/// match such a fresh token), so only allowed wildcards count there. A
/// trailing `>` stands for `*`, `*.*`, ... up to one token more than the
/// longest allowed pattern; beyond that nothing new can match.
bool pattern_covered(std::string_view pattern,
                     const std::vector<std::string>& allowed);

/// Returns true if `pattern` matches `topic` (both valid), exactly as
/// `pattern_matches` decides, but without allocating: the check of each
/// published message against the token's publish patterns.
bool matches_in_place(std::string_view pattern, std::string_view topic);

} // namespace tb
