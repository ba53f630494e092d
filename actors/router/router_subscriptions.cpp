// The router's fan-out subscriptions (actors/router/router_actor.hpp):
// subscribing, unsubscribing, a session's end, and the shards' answers to
// subscribe batches, waited for by ticket.

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "actors/router/router_actor.hpp"
#include "routing/pattern.hpp"

namespace tb {

// Answers every subscribe batch sent to `shard` and not yet answered (it
// ended: nothing is left to wait for, as a failed request was before).
void answer_dest_waits(router_state& st, const caf::actor_addr& shard) {
  std::vector<std::function<void()>> due;
  for (auto i = st.dest_waits.begin(); i != st.dest_waits.end();)
    if (i->second.first == shard) {
      due.push_back(std::move(i->second.second));
      i = st.dest_waits.erase(i);
    } else {
      ++i;
    }
  for (auto& done : due)
    done();
}

void dest_added(router_pointer self, uint64_t ticket) {
  auto& waits = self->state.dest_waits;
  if (auto i = waits.find(ticket); i != waits.end()) {
    auto done = std::move(i->second.second);
    waits.erase(i);
    done();
  }
}

// Adds fan-out subscriptions and answers once every matching topic of each
// confirmed: one message per shard for the whole batch.
caf::result<caf::ok_atom> subscribe(router_pointer self,
                                    fanout_subscriptions subscriptions) {
  auto& st = self->state;
  std::vector<fanout_subscriptions> per_shard(st.shards.size());
  // Patterns whose local count went 0->1: every peer is told (cluster).
  std::vector<std::string> fresh;
  for (auto& sub : subscriptions) {
    auto& keys = st.keys_by_session[sub.target.session.address()];
    if (keys.empty())
      self->monitor(sub.target.session);
    auto subscription_id = sub.target.subscription_id;
    if (keys.count(subscription_id) != 0)
      continue; // already in place: idempotent
    auto key = st.next_key++;
    keys.emplace(subscription_id, key);
    st.patterns.insert(sub.pattern, key);
    st.subscriptions.emplace(
        key, router_subscription{sub.pattern, sub.target, {}, {}});
    if (count_interest(st, sub.pattern))
      fresh.push_back(sub.pattern);
    if (is_literal_pattern(sub.pattern)) {
      per_shard[shard_index(st, sub.pattern)].push_back(std::move(sub));
      continue;
    }
    for (auto& batch : per_shard)
      batch.push_back(sub);
  }
  std::size_t asked = 0;
  for (auto& batch : per_shard)
    asked += batch.empty() ? 0 : 1;
  if (asked == 0 && (fresh.empty() || st.peers.empty()))
    return caf::ok_atom_v;
  auto promise = self->make_response_promise<caf::ok_atom>();
  // Held until every shard and peer was asked.
  auto remaining = std::make_shared<std::size_t>(asked + 1);
  auto count_down = [promise, remaining]() mutable {
    if (--*remaining == 0)
      promise.deliver(caf::ok_atom_v);
  };
  // Subscribed only once every live peer applied the new interest, so a
  // publish on any node after the confirm reaches the subscription.
  if (!fresh.empty())
    *remaining += announce_interest(self, true, fresh, count_down);
  // A ticket each, not a CAF request: with many subscribes unanswered the
  // router would hold one request per shard each, and CAF 0.17 shifts all
  // of them on every answer (docs/performance.md, "Subscribes, one per
  // frame").
  for (std::size_t k = 0; k < per_shard.size(); ++k)
    if (!per_shard[k].empty()) {
      auto ticket = st.next_dest_ticket++;
      st.dest_waits.emplace(ticket,
                            std::make_pair(st.shards[k].address(),
                                           std::function<void()>{count_down}));
      self->send(st.shards[k], add_dest_atom_v, std::move(per_shard[k]),
                 ticket);
    }
  count_down();
  return promise;
}

// Removes one subscription from the trie and from every matching topic.
void unsubscribe(router_pointer self, const caf::actor_addr& session,
                 uint64_t subscription_id) {
  auto& st = self->state;
  auto by_session = st.keys_by_session.find(session);
  if (by_session == st.keys_by_session.end())
    return;
  auto by_id = by_session->second.find(subscription_id);
  if (by_id == by_session->second.end())
    return;
  auto key = by_id->second;
  by_session->second.erase(by_id);
  if (by_session->second.empty()) {
    self->demonitor(session);
    st.keys_by_session.erase(by_session);
  }
  auto entry = st.subscriptions.find(key);
  if (entry == st.subscriptions.end())
    return;
  auto sub = std::move(entry->second);
  st.subscriptions.erase(entry);
  st.patterns.erase(sub.pattern, key);
  for (auto& shard : shards_for(st, sub.pattern))
    self->send(shard, del_dest_atom_v, sub.pattern, sub.target);
  if (uncount_interest(st, sub.pattern))
    announce_interest(self, false, {sub.pattern}, {});
}

// Drops every subscription of a session that ended. The shards drop it
// through their own monitors.
void forget_session(router_pointer self, const caf::actor_addr& session) {
  auto& st = self->state;
  auto i = st.keys_by_session.find(session);
  if (i == st.keys_by_session.end())
    return;
  std::vector<std::string> gone; // patterns whose count went to 0
  for (auto& [subscription_id, key] : i->second) {
    auto entry = st.subscriptions.find(key);
    if (entry == st.subscriptions.end())
      continue;
    st.patterns.erase(entry->second.pattern, key);
    if (uncount_interest(st, entry->second.pattern))
      gone.push_back(entry->second.pattern);
    st.subscriptions.erase(entry);
  }
  st.keys_by_session.erase(i);
  if (!gone.empty())
    announce_interest(self, false, gone, {});
}

} // namespace tb
