#include "auth/access_grant.hpp"

#include <algorithm>

#include "auth/pattern_cover.hpp"
#include "routing/pattern.hpp"

namespace tb {

bool may_publish(const access_grant& grant, std::string_view topic) {
  if (!grant.enforced)
    return true;
  return std::any_of(grant.publish.begin(), grant.publish.end(),
                     [&](const std::string& allowed) {
                       return matches_in_place(allowed, topic);
                     });
}

bool may_subscribe(const access_grant& grant, std::string_view pattern) {
  return !grant.enforced || pattern_covered(pattern, grant.subscribe);
}

bool may_join(const access_grant& grant, std::string_view name) {
  if (!grant.enforced || grant.any_group)
    return true;
  return std::find(grant.groups.begin(), grant.groups.end(), name) !=
         grant.groups.end();
}

bool may_administer(const access_grant& grant) {
  return !grant.enforced || grant.admin;
}

std::string describe_client(const access_grant& grant) {
  return "token \"" + grant.token + "\"";
}

} // namespace tb
