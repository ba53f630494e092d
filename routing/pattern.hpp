// Subscription patterns: the matching rules of spec 2.
//
// A pattern is tokens joined by '.', with the token rules of topics
// (`topic.hpp`), plus two wildcards that must each be a whole token:
//   '*'  matches exactly one token;
//   '>'  matches one or more tokens and may only be the last token.
// A pattern whose first token is '*' or '>' never matches a broker topic
// (first token starts with '$'); such topics are reached only by patterns
// that name their first token, e.g. `$dlq.*` or `$dlq.billing`.
//
// Valid:
//   orders.eu.created     orders.*.created     orders.>     *.*.created
//   *                     >                    $dlq.*       $sys.>
//   $dlq.billing          orders.$eu.*         orders.*.>
//
// Invalid:
//   ""                    (empty)
//   orders..created       (empty token 2)
//   .orders   orders.     (empty first / last token)
//   orders.eu*            ('*' is not a whole token)
//   orders.e>             ('>' is not a whole token)
//   orders.>.created      ('>' is not the last token)
//   >.orders   >.>        ('>' is not the last token)
//   orders.e u            (space; so are tabs and other control characters)
//   $*   $>               (a wildcard must be a whole token)
//   over 255 bytes or 32 tokens (with the default `name_limits`)
//
// Valid but non-matching:
//   orders.*.created  vs  orders.eu.created.v2   ('*' is exactly one token)
//   orders.*          vs  orders                 ('*' needs a token)
//   orders.>          vs  orders                 ('>' needs at least one token)
//   >                 vs  $dlq.billing           (root wildcards skip '$')
//   *.billing         vs  $dlq.billing           (root wildcards skip '$')
//   $dlq.*            vs  $sys.billing           (literal first token differs)
//   orders.eu         vs  orders.EU              (tokens compare bytewise)

#pragma once

#include <string_view>

#include "routing/error.hpp"
#include "routing/topic.hpp"

namespace tb {

/// Checks that `pattern` is a valid subscription pattern, returning
/// `ec::invalid_pattern` with the problem, or no error.
error_info validate_pattern(std::string_view pattern,
                            const name_limits& limits);

/// Returns true if `pattern` matches `topic`; the simple reference matcher
/// that `sublist` and `topic_tree` must agree with. Assumes both are valid.
bool pattern_matches(std::string_view pattern, std::string_view topic);

/// Returns true if `pattern` has no wildcard token, so it matches only the
/// topic of the same name. Assumes a valid pattern.
bool is_literal_pattern(std::string_view pattern);

} // namespace tb
