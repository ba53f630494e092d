// The router's part of the Stats view: its own counters, and the actors the
// collector asks next (the topics a query lists, every group, the extension
// actors users registered).

#include <algorithm>

#include "actors/router_actor.hpp"
#include "actors/routing/pattern.hpp"

namespace tb {

caf::result<router_view> describe_router(router_pointer self,
                                         const stats_query& query) {
  auto& st = self->state;
  router_view view;
  view.router = router_stats{st.topics.size(), st.subscriptions.size(),
                             st.keys_by_session.size(), st.groups.size(),
                             mailbox_length(self)};
  if (!query.topic_pattern.empty()) {
    if (auto err = validate_pattern(query.topic_pattern, st.names))
      return make_caf_error(err.code, "topic_pattern: " + err.text);
    // Names first, sorted, so that a limit cuts the same topics every time;
    // only the listed topics are asked for their counters.
    std::vector<std::string> names;
    st.topic_index.for_each_match(
        query.topic_pattern,
        [&](const std::string& name) { names.push_back(name); });
    view.topics_matched = names.size();
    auto limit = std::min<size_t>(query.limit, names.size());
    std::partial_sort(names.begin(),
                      names.begin() + static_cast<std::ptrdiff_t>(limit),
                      names.end());
    view.topics.reserve(limit);
    for (size_t i = 0; i < limit; ++i)
      view.topics.push_back(st.topics.at(names[i]));
  }
  view.groups.reserve(st.groups.size());
  for (auto& [name, group] : st.groups)
    view.groups.push_back(group.handle);
  view.extensions.reserve(st.extensions.size());
  for (auto& [addr, actor] : st.extensions)
    view.extensions.push_back(actor);
  view.ended_sessions = st.ended_sessions;
  return view;
}

void observe_extension(router_pointer self, observable_actor actor) {
  if (!actor)
    return;
  auto addr = actor.address();
  if (self->state.extensions.emplace(addr, actor).second)
    self->monitor(actor);
}

} // namespace tb
