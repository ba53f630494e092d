// The router's part of the Stats view: its own counters, and the actors the
// collector asks next (the topic shards, which list the topics a query
// names, every group, the extension actors users registered).

#include "actors/router/router_actor.hpp"
#include "actors/router/router_directory.hpp"
#include "routing/pattern.hpp"

namespace tb {

router_stats current_router_stats(router_pointer self) {
  auto& st = self->state;
  // Each group has one entry in the trie, whatever its members; a peer's
  // interest has entries too, which are not subscriptions.
  auto subscriptions = st.subscriptions.size() - st.peer_keys;
  return router_stats{st.quota->live(),
                      subscriptions,
                      subscriptions - st.groups.size(),
                      st.keys_by_session.size(),
                      st.groups.size(),
                      mailbox_length(self)};
}

caf::result<router_view> describe_router(router_pointer self,
                                         const stats_query& query) {
  auto& st = self->state;
  router_view view;
  view.router = current_router_stats(self);
  // The shards list their own topics; the pattern is checked here, once.
  if (!query.topic_pattern.empty())
    if (auto err = validate_pattern(query.topic_pattern, st.names))
      return make_caf_error(err.code, "topic_pattern: " + err.text);
  view.shards = st.shards;
  view.groups.reserve(st.groups.size());
  view.group_owners.reserve(st.groups.size());
  for (auto& [name, group] : st.groups) {
    view.groups.push_back(group.handle);
    view.group_owners.push_back(owner_of(st, group));
    view.group_replicas.push_back(group.replica);
    view.group_terms.push_back(group.term);
  }
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
