// What one authenticated client may do (spec 10): the permissions a session
// or a call carries, and the checks made against them.

#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace tb {

/// The permissions of one client, copied from its token when the stream or
/// call starts (and replaced on a reload). A default grant, with `enforced`
/// false, allows everything: the broker runs without auth.
struct access_grant {
  /// True when auth is on and these lists apply.
  bool enforced = false;
  /// The token's name, for log lines and counters (never its secret).
  std::string token;
  /// Topic patterns it may publish to.
  std::vector<std::string> publish;
  /// Topic patterns it may subscribe to.
  std::vector<std::string> subscribe;
  /// The groups it may join, unless `any_group`.
  std::vector<std::string> groups;
  /// True if it may join any group its patterns allow.
  bool any_group = true;
  /// True if it may call CreateGroup, DeleteGroup, ListGroups and Stats.
  bool admin = false;
};

/// @relates access_grant
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, access_grant& x) {
  return f(caf::meta::type_name("access_grant"), x.enforced, x.token, x.publish,
           x.subscribe, x.groups, x.any_group, x.admin);
}

/// Returns true if `grant` allows publishing to the (valid) `topic`.
bool may_publish(const access_grant& grant, std::string_view topic);

/// Returns true if `grant` allows subscribing to the (valid) `pattern`:
/// only if every topic it can match is allowed (see `pattern_covered`).
bool may_subscribe(const access_grant& grant, std::string_view pattern);

/// Returns true if `grant` allows joining the group `name`.
bool may_join(const access_grant& grant, std::string_view name);

/// Returns true if `grant` allows the admin calls.
bool may_administer(const access_grant& grant);

/// Returns how refusals name the client: `token "NAME"`.
std::string describe_client(const access_grant& grant);

} // namespace tb
