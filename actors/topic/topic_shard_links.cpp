// How a topic shard routes to peer nodes (cluster, docs/cluster.md "Fan-out
// across nodes"): a peer's interest is a destination of the matching
// routes, like one fan-out subscription per (peer, pattern), except that a
// route lists each peer's link once however many of its patterns match.
// Each topic counts the matching patterns per link, so the link leaves the
// route only when the last of them goes.

#include <algorithm>

#include "actors/topic/topic_shard.hpp"

namespace tb {

namespace {

// Returns the entry of `addr` in `topic`'s link counts, or the end.
auto shard_link_entry(shard_topic& topic, const caf::actor_addr& addr) {
  return std::find_if(topic.link_counts.begin(), topic.link_counts.end(),
                      [&](const auto& x) { return x.first == addr; });
}

// Installs a copy of `topic`'s route with `change` applied to its links.
template <class Change>
void shard_change_links(shard_topic& topic, route_pushes& pushes,
                        Change change) {
  auto next = std::make_shared<route>(*topic.current);
  change(next->links);
  install_route(topic, std::move(next), pushes);
}

// Removes `link` from a link list.
void shard_erase_link(std::vector<link_out_actor>& links,
                      const link_out_actor& link) {
  links.erase(std::remove(links.begin(), links.end(), link), links.end());
}

} // namespace

std::vector<link_out_actor>
seed_links(shard_topic& topic, const std::vector<link_out_actor>& links) {
  std::vector<link_out_actor> unique;
  for (auto& link : links) {
    auto entry = shard_link_entry(topic, link.address());
    if (entry != topic.link_counts.end()) {
      ++entry->second;
      continue;
    }
    topic.link_counts.emplace_back(link.address(), 1);
    unique.push_back(link);
  }
  return unique;
}

caf::result<caf::ok_atom>
shard_add_links(topic_shard_pointer self,
                const std::vector<std::string>& patterns,
                const link_out_actor& link) {
  auto& st = self->state;
  auto addr = link.address();
  route_pushes pushes;
  for (auto& pattern : patterns)
    st.index.for_each_match(pattern, [&](const std::string& name) {
      auto& topic = st.topics.at(name);
      auto entry = shard_link_entry(topic, addr);
      if (entry != topic.link_counts.end()) {
        ++entry->second;
        return;
      }
      topic.link_counts.emplace_back(addr, 1);
      shard_change_links(topic, pushes,
                         [&](auto& links) { links.push_back(link); });
      update_idleness(self, topic);
    });
  if (pushes.batches.empty())
    return caf::ok_atom_v;
  auto promise = self->make_response_promise<caf::ok_atom>();
  auto remaining = std::make_shared<std::size_t>(1); // held until all asked
  std::function<void()> count_down = [promise, remaining]() mutable {
    if (--*remaining == 0)
      promise.deliver(caf::ok_atom_v);
  };
  *remaining += send_pushes(self, pushes, count_down);
  count_down();
  return promise;
}

void shard_remove_links(topic_shard_pointer self,
                        const std::vector<std::string>& patterns,
                        const link_out_actor& link) {
  auto& st = self->state;
  auto addr = link.address();
  route_pushes pushes;
  for (auto& pattern : patterns)
    st.index.for_each_match(pattern, [&](const std::string& name) {
      auto& topic = st.topics.at(name);
      auto entry = shard_link_entry(topic, addr);
      if (entry == topic.link_counts.end() || --entry->second > 0)
        return;
      topic.link_counts.erase(entry);
      shard_change_links(topic, pushes,
                         [&](auto& links) { shard_erase_link(links, link); });
      update_idleness(self, topic);
    });
  send_pushes(self, pushes, [] {});
}

void shard_drop_link(topic_shard_pointer self, const link_out_actor& link) {
  auto& st = self->state;
  auto addr = link.address();
  route_pushes pushes;
  // A peer going away is rare; a scan of the shard's topics is fine.
  for (auto& [name, topic] : st.topics) {
    auto entry = shard_link_entry(topic, addr);
    if (entry == topic.link_counts.end())
      continue;
    topic.link_counts.erase(entry);
    shard_change_links(topic, pushes,
                       [&](auto& links) { shard_erase_link(links, link); });
    update_idleness(self, topic);
  }
  send_pushes(self, pushes, [] {});
}

} // namespace tb
