// The router's side of a cluster (docs/cluster.md, "Fan-out across nodes"):
// interest between nodes, as NATS routes do it (RS+/RS-).
//
// A node tells every peer when a pattern's count of local fan-out
// subscriptions goes 0->1 and when it goes back to 0; the peer's router
// makes the pattern a destination of its matching routes, pointing at its
// link toward this node (one per peer, so a message crosses once however
// many subscribers the pattern has here). When the cluster actor sends
// `peer_up`, the two routers exchange their full interest in chunks; the
// answer to `peer_up` waits until the peer's full interest is applied here.
// `peer_down` (or the peer router's down message) drops all of it at once.
//
//   cluster --peer_up(B, router B)--> router A --isync(chunks)--> router B
//                                              <--isync(chunks)--
//   (answered once B's last chunk is applied)
//   session --sub--> router A --interest(true, [p])--> router B --add_link-->
//                                                        shards --route-->
//   Subscribed <----- (once every peer answered) <-----ok------    publishers

#include <algorithm>

#include "actors/link/link_in.hpp"
#include "actors/link/link_out.hpp"
#include "actors/router/router_actor.hpp"
#include "actors/router/router_directory.hpp"
#include "actors/router/router_replicas.hpp"
#include "log/log.hpp"
#include "routing/pattern.hpp"

namespace tb {

std::pair<caf::actor_addr, router_peer*> peer_of_sender(router_pointer self) {
  auto& st = self->state;
  auto sender = self->current_sender();
  auto addr = caf::actor_cast<caf::actor_addr>(sender);
  auto [entry, added] = st.peers.try_emplace(addr);
  if (added)
    self->monitor(caf::actor_cast<caf::actor>(sender));
  return {addr, &entry->second};
}

void peer_applied(router_pointer self, const caf::actor_addr& addr,
                  uint64_t id) {
  auto& peers = self->state.peers;
  auto peer = peers.find(addr);
  if (peer == peers.end())
    return;
  auto wait = peer->second.waits.find(id);
  if (wait == peer->second.waits.end())
    return;
  auto fn = std::move(wait->second);
  peer->second.waits.erase(wait);
  if (fn)
    fn();
}

void peer_maybe_ready(router_peer& peer) {
  if (!peer.synced || !peer.groups_synced)
    return;
  for (auto& ready : peer.ready)
    ready.deliver(caf::ok_atom_v);
  peer.ready.clear();
}

namespace {

// Adds (or removes) the peer's interest in `patterns` to the trie and to
// the routes of the matching topics; calls `done()` once every shard
// asked confirmed that its publishers have the new routes.
void apply_peer_interest(router_pointer self, router_peer& peer, bool add,
                         const std::vector<std::string>& patterns,
                         std::function<void()> done) {
  auto& st = self->state;
  std::vector<std::vector<std::string>> per_shard(st.shards.size());
  for (auto& pattern : patterns) {
    if (add) {
      if (peer.interest.count(pattern) != 0)
        continue;
      if (auto err = validate_pattern(pattern, st.names)) {
        log::warn("peer interest refused: not a valid pattern",
                  {{"peer", peer.name}, {"error", err.text}});
        continue;
      }
      auto key = st.next_key++;
      peer.interest.emplace(pattern, key);
      st.patterns.insert(pattern, key);
      router_subscription entry;
      entry.pattern = pattern;
      entry.link = peer.outbound;
      st.subscriptions.emplace(key, std::move(entry));
      ++st.peer_keys;
    } else {
      auto i = peer.interest.find(pattern);
      if (i == peer.interest.end())
        continue;
      st.patterns.erase(pattern, i->second);
      st.subscriptions.erase(i->second);
      --st.peer_keys;
      peer.interest.erase(i);
    }
    if (is_literal_pattern(pattern)) {
      per_shard[shard_index(st, pattern)].push_back(pattern);
      continue;
    }
    for (auto& batch : per_shard)
      batch.push_back(pattern);
  }
  auto remaining = std::make_shared<std::size_t>(1); // held until all asked
  auto count_down = [done = std::move(done), remaining] {
    if (--*remaining == 0 && done)
      done();
  };
  for (std::size_t k = 0; k < per_shard.size(); ++k) {
    if (per_shard[k].empty())
      continue;
    if (!add) {
      self->send(st.shards[k], del_link_atom_v, std::move(per_shard[k]),
                 peer.outbound);
      continue;
    }
    ++*remaining;
    self->request(st.shards[k], caf::infinite, add_link_atom_v,
                  std::move(per_shard[k]), peer.outbound)
        .then([count_down](caf::ok_atom) { count_down(); },
              [count_down](caf::error&) { count_down(); });
  }
  count_down();
}

// Spawns the peer's inbound actor if it has none (linked: it stops with
// the router).
void ensure_inbound(router_pointer self, router_peer& peer) {
  if (peer.inbound)
    return;
  auto& st = self->state;
  peer.inbound =
      self->spawn<caf::linked>(link_in_impl, peer.name, st.session_ctx);
  st.linked_children.insert(peer.inbound.address());
}

// Sends the peer this node's full interest in chunks of `interest_chunk`
// patterns, the last one flagged (an empty interest is one empty chunk).
void send_full_interest(router_pointer self, router_peer& peer) {
  auto& st = self->state;
  interest_sync chunk;
  chunk.inbound = peer.inbound;
  auto flush = [&](bool last) {
    chunk.last = last;
    self->request(peer.router, caf::infinite, isync_atom_v, chunk)
        .then([](caf::ok_atom) {}, [](caf::error&) {});
    chunk.patterns.clear();
  };
  for (auto& [pattern, count] : st.interest) {
    chunk.patterns.push_back(pattern);
    if (chunk.patterns.size() == st.interest_chunk)
      flush(false);
  }
  flush(true);
  peer.sync_sent = true;
}

} // namespace

bool count_interest(router_state& st, const std::string& pattern) {
  return ++st.interest[pattern] == 1;
}

bool uncount_interest(router_state& st, const std::string& pattern) {
  auto i = st.interest.find(pattern);
  if (i == st.interest.end() || --i->second > 0)
    return false;
  st.interest.erase(i);
  return true;
}

std::size_t announce_interest(router_pointer self, bool add,
                              const std::vector<std::string>& patterns,
                              const std::function<void()>& on_applied) {
  std::size_t told = 0;
  for (auto& [addr, peer] : self->state.peers) {
    if (!peer.sync_sent)
      continue; // its full interest sync, still to come, has them
    auto id = peer.next_wait++;
    peer.waits.emplace(id, on_applied);
    self->request(peer.router, caf::infinite, interest_atom_v, add, patterns)
        .then([self, addr = addr,
               id](caf::ok_atom) { peer_applied(self, addr, id); },
              [self, addr = addr, id](caf::error&) {
                peer_applied(self, addr, id);
              });
    ++told;
  }
  return told;
}

caf::result<caf::ok_atom> peer_connected(router_pointer self, std::string name,
                                         caf::actor peer_router) {
  auto& st = self->state;
  if (!peer_router)
    return make_caf_error(ec::invalid_request,
                          "peer_up for \"" + name + "\" without a router");
  auto addr = peer_router.address();
  auto [entry, added] = st.peers.try_emplace(addr);
  if (added)
    self->monitor(peer_router);
  auto& peer = entry->second;
  log::info("peer connected, syncing interest",
            {{"peer", name}, {"patterns", st.interest.size()}});
  peer.name = name;
  st.peer_names[name] = addr;
  peer.router = std::move(peer_router);
  ensure_inbound(self, peer);
  if (!peer.sync_sent) {
    // Groups first: the peer knows every group here before it is ready.
    send_owned_groups(self, peer);
    send_full_interest(self, peer);
  }
  // Replicas: owned groups without one get one now that a node came up.
  place_replicas(self);
  if (peer.synced && peer.groups_synced)
    return caf::ok_atom_v;
  peer.ready.push_back(self->make_response_promise<caf::ok_atom>());
  return peer.ready.back();
}

void peer_disconnected(router_pointer self, const std::string& name) {
  auto& st = self->state;
  auto i = st.peer_names.find(name);
  if (i == st.peer_names.end())
    return;
  auto addr = i->second;
  drop_peer(self, addr);
}

void drop_peer(router_pointer self, const caf::actor_addr& addr) {
  auto& st = self->state;
  auto i = st.peers.find(addr);
  if (i == st.peers.end())
    return;
  auto peer = std::move(i->second);
  st.peers.erase(i);
  if (auto n = st.peer_names.find(peer.name);
      n != st.peer_names.end() && n->second == addr)
    st.peer_names.erase(n);
  log::info("peer gone, its interest dropped",
            {{"peer", peer.name}, {"patterns", peer.interest.size()}});
  for (auto& [pattern, key] : peer.interest) {
    st.patterns.erase(pattern, key);
    st.subscriptions.erase(key);
    --st.peer_keys;
  }
  if (peer.outbound) {
    for (auto& shard : st.shards)
      self->send(shard, drop_link_atom_v, peer.outbound);
    // What the link still held is lost with the peer: count it, then stop
    // the link.
    auto link = peer.outbound;
    auto stop = [self, link] {
      self->send_exit(link, caf::exit_reason::user_shutdown);
    };
    self->request(link, caf::infinite, peer_down_atom_v)
        .then(
            [self, stop, name = peer.name](uint64_t lost) {
              if (!name.empty())
                self->state.peer_lost[name] += lost;
              stop();
            },
            [stop](caf::error&) { stop(); });
  }
  if (peer.inbound)
    self->send_exit(peer.inbound, caf::exit_reason::user_shutdown);
  // Replicas: its replicated groups wait for their replica's takeover
  // (this node's replica is promoted), its replicas are placed again.
  replicas_node_down(self, addr, peer.name);
  // Groups across nodes: its groups are lost, requests to it failed.
  drop_owner_groups(self, addr, peer.name);
  fail_pending(self, addr, peer.name);
  // What waited on the peer waits no more: a dead peer holds no confirm.
  for (auto& [id, fn] : peer.waits)
    if (fn)
      fn();
  for (auto& promise : peer.ready)
    promise.deliver(caf::ok_atom_v);
  // Config groups whose owner it was move here if this node is next.
  create_config_groups(self);
}

caf::result<caf::ok_atom> take_interest_sync(router_pointer self,
                                             interest_sync& chunk) {
  auto& st = self->state;
  ++st.sync_chunks_received;
  auto [addr, peer] = peer_of_sender(self);
  if (!peer->outbound) {
    peer->outbound = self->spawn<caf::linked>(link_out_impl, peer->name,
                                              chunk.inbound, st.links);
    st.linked_children.insert(peer->outbound.address());
  }
  auto promise = self->make_response_promise<caf::ok_atom>();
  apply_peer_interest(
      self, *peer, true, chunk.patterns,
      [self, addr = addr, last = chunk.last, promise]() mutable {
        auto& peers = self->state.peers;
        if (auto i = peers.find(addr); i != peers.end() && last) {
          i->second.synced = true;
          peer_maybe_ready(i->second);
        }
        promise.deliver(caf::ok_atom_v);
      });
  return promise;
}

caf::result<caf::ok_atom>
take_interest_change(router_pointer self, bool add,
                     const std::vector<std::string>& patterns) {
  ++self->state.interest_changes_received;
  auto [addr, peer] = peer_of_sender(self);
  if (!peer->outbound)
    return make_caf_error(ec::invalid_request,
                          "interest change from a peer that never synced");
  auto promise = self->make_response_promise<caf::ok_atom>();
  apply_peer_interest(self, *peer, add, patterns,
                      [promise]() mutable { promise.deliver(caf::ok_atom_v); });
  return promise;
}

caf::result<peer_stats_list> describe_peers(router_pointer self) {
  auto& st = self->state;
  auto result = std::make_shared<peer_stats_list>();
  auto promise = self->make_response_promise<peer_stats_list>();
  auto remaining = std::make_shared<std::size_t>(1); // held until all asked
  auto count_down = [promise, result, remaining]() mutable {
    if (--*remaining == 0) {
      std::sort(result->begin(), result->end(),
                [](const peer_stats& x, const peer_stats& y) {
                  return x.name < y.name;
                });
      promise.deliver(std::move(*result));
    }
  };
  // A peer that is down still shows what was lost with it.
  for (auto& [name, lost] : st.peer_lost)
    if (st.peer_names.count(name) == 0)
      result->push_back(peer_stats{name, 0, false, {}, lost});
  for (auto& [addr, peer] : st.peers) {
    auto at = result->size();
    uint64_t lost = 0;
    if (auto i = st.peer_lost.find(peer.name); i != st.peer_lost.end())
      lost = i->second;
    result->push_back(
        peer_stats{peer.name, peer.interest.size(), peer.synced, {}, lost});
    if (peer.outbound) {
      ++*remaining;
      self->request(peer.outbound, caf::infinite, stats_atom_v)
          .then(
              [result, at, count_down](link_stats& x) mutable {
                auto& link = (*result)[at].link;
                auto received = link.messages_received;
                auto batches = link.batches_received;
                link = x;
                link.messages_received = received;
                link.batches_received = batches;
                count_down();
              },
              [count_down](caf::error&) mutable { count_down(); });
    }
    if (peer.inbound) {
      ++*remaining;
      self->request(peer.inbound, caf::infinite, stats_atom_v)
          .then(
              [result, at, count_down](link_stats& x) mutable {
                auto& link = (*result)[at].link;
                link.messages_received = x.messages_received;
                link.batches_received = x.batches_received;
                count_down();
              },
              [count_down](caf::error&) mutable { count_down(); });
    }
  }
  count_down();
  return promise;
}

} // namespace tb
