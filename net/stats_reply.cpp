#include "net/stats_reply.hpp"

#include <algorithm>
#include <fstream>
#include <string_view>
#include <unistd.h>
#include <unordered_map>

#include "net/auth_gate.hpp"
#include "net/group_admin.hpp"

#ifndef TINYBROKER_VERSION
#error "TINYBROKER_VERSION must be defined by the build"
#endif

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// Returns the resident memory of this process in bytes (0 if unknown).
uint64_t resident_bytes() {
  std::ifstream statm{"/proc/self/statm"};
  uint64_t pages = 0;
  uint64_t resident = 0;
  if (!(statm >> pages >> resident))
    return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

bool contains(const std::string& text, const std::string& part) {
  return part.empty() || text.find(part) != std::string::npos;
}

void to_proto(const latency_histogram& in, pb::LatencyHistogram& out) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < latency_histogram::bounds_ns.size(); ++i) {
    out.add_upper_bounds_seconds(
        static_cast<double>(latency_histogram::bounds_ns[i]) / 1e9);
    if (i < in.counts.size())
      cumulative += in.counts[i];
    out.add_cumulative_counts(cumulative);
  }
  out.set_count(in.count);
  out.set_sum_seconds(static_cast<double>(in.sum_ns) / 1e9);
}

void add_actor(pb::StatsReply& reply, const char* kind, std::string name,
               uint64_t mailbox, caf::actor_id id) {
  auto* actor = reply.add_actors();
  actor->set_kind(kind);
  actor->set_name(std::move(name));
  actor->set_mailbox(mailbox);
  actor->set_id(id);
}

// Adds the broker totals: over every live and ended session, the unary
// publishers and every group.
void fill_totals(stats_gathering& g, pb::StatsReply& reply) {
  session_stats sum = g.view.ended_sessions;
  for (auto& [actor, s] : g.sessions)
    accumulate(sum, s);
  for (auto& s : g.publishers)
    accumulate(sum, s);
  auto& b = *reply.mutable_broker();
  uint64_t group_bytes = 0, group_expired_ttl = 0, group_scheduled = 0;
  for (auto& info : g.groups) {
    group_bytes += info.counters.held_bytes;
    group_expired_ttl += info.counters.expired_ttl;
    group_scheduled += info.counters.scheduled;
    if (auto& sums = g.sources.group_sums) {
      sums->pending += info.counters.pending;
      sums->in_flight += info.counters.in_flight;
    }
  }
  b.set_group_expired_ttl(group_expired_ttl);
  b.set_group_scheduled(group_scheduled);
  if (g.sources.floor)
    g.sources.floor->apply(sum);
  b.set_published(sum.published);
  b.set_unrouted(sum.unrouted);
  b.set_delivered(sum.delivered);
  b.set_dropped(sum.dropped);
  b.set_refused(sum.refused);
  b.set_permission_denied(sum.denied);
  if (auto* auth = g.sources.auth) {
    // Refusals at the door are refusals too.
    auto unauthenticated = auth->unauthenticated.load();
    auto admin_denied = auth->admin_denied.load();
    b.set_unauthenticated(unauthenticated);
    b.set_permission_denied(sum.denied + admin_denied);
    b.set_refused(sum.refused + unauthenticated + admin_denied);
  }
  b.set_requests(sum.requests.requests);
  b.set_replies(sum.requests.replies);
  b.set_no_responders(sum.requests.no_responders);
  b.set_request_timeouts(sum.requests.timeouts);
  b.set_late_replies(sum.requests.late_replies);
  b.set_pending_requests(sum.requests.pending);
  b.set_buffered(sum.buffered);
  b.set_held_bytes(sum.buffered_bytes + group_bytes);
  b.set_fanout_scheduled(g.delayed.scheduled);
  b.set_fanout_next_due_unix_ms(g.delayed.next_due_unix_ms);
  b.set_fanout_delayed_delivered(g.delayed.scheduled_fired);
  b.set_fanout_scheduled_refused(g.delayed.scheduled_refused);
  b.set_fanout_expired(sum.expired);
  b.set_sessions(g.sources.sessions.size());
  b.set_topics(g.view.router.topics);
  b.set_duplicates(g.duplicates);
  b.set_dedup_ids(g.dedup_ids);
  b.set_dedup_evicted(g.dedup_evicted);
  // Fan-out subscriptions and group memberships: a group counts through
  // its members (those not leaving), not as itself.
  uint64_t memberships = 0;
  for (auto& info : g.groups)
    memberships += info.counters.members;
  b.set_subscriptions(g.view.router.fanout_subscriptions + memberships);
  b.set_groups(g.view.router.groups);
  b.set_version(TINYBROKER_VERSION);
  b.set_uptime_ms(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - g.sources.started)
          .count()));
  b.set_rss_bytes(resident_bytes());
  to_proto(sum.delivery_latency, *b.mutable_delivery_latency());
}

// Fills the lists: filtered, sorted by name, cut to the limit.
void fill_lists(stats_gathering& g, pb::StatsReply& reply) {
  auto& req = g.request;
  // Each shard listed its first `limit` topics by name: merged, the first
  // `limit` of all of them are among those.
  std::sort(g.topics.begin(), g.topics.end(),
            [](auto& x, auto& y) { return x.name < y.name; });
  g.topics.resize(std::min<size_t>(g.topics.size(), g.limit));
  reply.set_topics_matched(g.topics_matched);
  for (auto& t : g.topics) {
    auto* out = reply.add_topics();
    out->set_name(t.name);
    out->set_destinations(t.destinations);
    out->set_groups(t.groups);
    out->set_publishers(t.cachers);
  }
  std::vector<const group_info*> groups;
  for (auto& info : g.groups)
    if (contains(info.name, req.group_filter()))
      groups.push_back(&info);
  auto backlog = [](const group_info* x) {
    return x->counters.pending + x->counters.in_flight;
  };
  if (g.sources.by_load)
    std::sort(groups.begin(), groups.end(), [&](auto* x, auto* y) {
      auto bx = backlog(x);
      auto by = backlog(y);
      return bx != by ? bx > by : x->name < y->name;
    });
  else
    std::sort(groups.begin(), groups.end(),
              [](auto* x, auto* y) { return x->name < y->name; });
  // The console lists the actors of every matching group, not only those
  // listed (and sorts them by mailbox below).
  auto actor_groups = groups;
  reply.set_groups_matched(groups.size());
  groups.resize(std::min<size_t>(groups.size(), g.limit));
  for (auto* info : groups) {
    auto* out = reply.add_groups();
    to_proto(*info, *out);
    for (auto& m : info->members) {
      auto* member = out->add_members();
      member->set_peer(m.peer);
      member->set_subscription_id(m.subscription_id);
      member->set_in_flight(m.in_flight);
      member->set_max_in_flight(m.max_in_flight);
      member->set_credit(
          m.max_in_flight > m.in_flight ? m.max_in_flight - m.in_flight : 0);
      member->set_acks(m.acks);
      member->set_nacks(m.nacks);
      member->set_rejects(m.rejects);
      member->set_oldest_in_flight_age_ms(m.oldest_in_flight_age_ms);
      member->set_active(m.active);
      member->set_stalled(m.stalled);
      member->set_expired(m.expired);
      member->set_client_name(m.client_name);
      member->set_token(m.token);
    }
  }
  std::vector<const std::pair<session_actor, session_stats>*> sessions;
  for (auto& entry : g.sessions)
    if (contains(entry.second.peer, req.session_filter()))
      sessions.push_back(&entry);
  auto busy = [](const session_stats& x) {
    return x.published + x.delivered;
  };
  if (g.sources.by_load)
    std::sort(sessions.begin(), sessions.end(), [&](auto* x, auto* y) {
      auto bx = busy(x->second);
      auto by = busy(y->second);
      return bx != by ? bx > by : x->second.peer < y->second.peer;
    });
  else
    std::sort(sessions.begin(), sessions.end(),
              [](auto* x, auto* y) { return x->second.peer < y->second.peer; });
  auto actor_sessions = sessions;
  reply.set_sessions_matched(sessions.size());
  sessions.resize(std::min<size_t>(sessions.size(), g.limit));
  for (auto* entry : sessions) {
    auto& s = entry->second;
    auto* out = reply.add_sessions();
    out->set_peer(s.peer);
    out->set_token(s.token);
    out->set_client_name(s.client_name);
    out->set_permission_denied(s.denied);
    out->set_published(s.published);
    out->set_delivered(s.delivered);
    out->set_dropped(s.dropped);
    out->set_subscriptions(s.subscriptions);
    out->set_buffered_messages(s.buffered);
    out->set_buffered_bytes(s.buffered_bytes);
    out->set_connected_ms(s.connected_ms);
    out->set_unrouted(s.unrouted);
    out->set_requests(s.requests.requests);
    out->set_replies(s.requests.replies);
    out->set_no_responders(s.requests.no_responders);
    out->set_request_timeouts(s.requests.timeouts);
    out->set_late_replies(s.requests.late_replies);
  }
  if (!req.actors())
    return;
  add_actor(reply, "router", "router", g.view.router.mailbox,
            g.sources.router.id());
  for (size_t i = 0; i < g.shards.size(); ++i)
    add_actor(reply, "topic_shard",
              "topics " + std::to_string(i + 1) + "/" +
                  std::to_string(g.shards.size()),
              g.shards[i].second, g.shards[i].first);
  if (!g.sources.by_load) {
    actor_groups = groups;
    actor_sessions = sessions;
  }
  std::unordered_map<std::string_view, caf::actor_id> group_ids;
  for (auto& [id, name] : g.group_ids)
    group_ids.emplace(name, id);
  for (auto* info : actor_groups)
    if (auto i = group_ids.find(info->name); i != group_ids.end())
      add_actor(reply, "group", info->name + " (" + info->settings.policy + ")",
                info->mailbox, i->second);
  for (auto* entry : actor_sessions)
    add_actor(reply, "session", entry->second.peer, entry->second.mailbox,
              entry->first.id());
  for (size_t i = 0; i < g.sources.publishers.size(); ++i)
    if (i < g.publishers.size())
      add_actor(reply, "publisher", "unary-publisher-" + std::to_string(i),
                g.publishers[i].mailbox, g.sources.publishers[i].id());
  for (auto& [id, ext] : g.extensions)
    add_actor(reply, ext.kind.c_str(), ext.name, ext.mailbox, id);
  if (!g.sources.by_load)
    return;
  auto& actors = *reply.mutable_actors();
  std::stable_sort(actors.begin(), actors.end(),
                   [](auto& x, auto& y) { return x.mailbox() > y.mailbox(); });
  while (static_cast<size_t>(actors.size()) > g.limit)
    actors.RemoveLast();
}

} // namespace

void fill_stats_reply(stats_gathering& g, pb::StatsReply& reply) {
  fill_totals(g, reply);
  fill_lists(g, reply);
}

} // namespace tb
