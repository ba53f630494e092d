#include "net/stats_collector.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <unordered_map>

#include <caf/event_based_actor.hpp>

#include "net/stats_reply.hpp"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// How long the collector waits for any one actor.
constexpr auto ask_timeout = std::chrono::seconds(5);

using gathering_ptr = std::shared_ptr<stats_gathering>;

void finish(const gathering_ptr& g) {
  pb::StatsReply reply;
  fill_stats_reply(*g, reply);
  g->done(reply, error_info{});
}

// Asks every actor the router's view names, and the sessions.
void ask_all(caf::event_based_actor* self, const gathering_ptr& g) {
  auto answered = [self, g] {
    if (--g->outstanding == 0) {
      finish(g);
      self->quit();
    }
  };
  auto& view = g->view;
  g->outstanding = 1 + view.shards.size() + view.groups.size() +
                   view.extensions.size() + g->sources.sessions.size() +
                   g->sources.publishers.size();
  auto ignore = [answered](caf::error&) {
    answered();
  };
  g->shards.resize(view.shards.size());
  auto query = stats_query{g->request.topic_pattern(), g->limit};
  for (size_t i = 0; i < view.shards.size(); ++i)
    self->request(view.shards[i], ask_timeout, stats_atom_v, query)
        .then(
            [g, answered, i, id = view.shards[i].id()](shard_view& s) {
              g->shards[i] = {id, s.mailbox};
              auto& d = g->delayed;
              d.scheduled += s.scheduled;
              d.scheduled_fired += s.scheduled_fired;
              d.scheduled_refused += s.scheduled_refused;
              if (s.next_due_unix_ms != 0 &&
                  (d.next_due_unix_ms == 0 ||
                   s.next_due_unix_ms < d.next_due_unix_ms))
                d.next_due_unix_ms = s.next_due_unix_ms;
              g->topics_matched += s.matched;
              g->duplicates += s.duplicates;
              g->dedup_ids += s.dedup_ids;
              g->dedup_evicted += s.dedup_evicted;
              for (auto& t : s.topics)
                g->topics.push_back(std::move(t));
              answered();
            },
            ignore);
  for (size_t i = 0; i < view.groups.size(); ++i)
    self->request(view.groups[i], ask_timeout, stats_atom_v)
        .then(
            [g, answered, i, id = view.groups[i].id()](group_info& info) {
              // Groups across nodes: the owner as the router's directory
              // knows it.
              if (i < g->view.group_owners.size())
                info.owner_node = g->view.group_owners[i];
              if (i < g->view.group_replicas.size())
                info.replica_node = g->view.group_replicas[i];
              if (i < g->view.group_terms.size())
                info.term = g->view.group_terms[i];
              g->group_ids.emplace_back(id, info.name);
              g->groups.push_back(std::move(info));
              answered();
            },
            ignore);
  for (auto& ext : view.extensions)
    self->request(ext, ask_timeout, stats_atom_v)
        .then(
            [g, answered, id = ext.id()](actor_stats& s) {
              g->extensions.emplace_back(id, std::move(s));
              answered();
            },
            ignore);
  for (auto& session : g->sources.sessions)
    self->request(session, ask_timeout, stats_atom_v)
        .then(
            [g, answered, session](session_stats& s) {
              g->sessions.emplace_back(session, std::move(s));
              answered();
            },
            ignore);
  for (auto& publisher : g->sources.publishers)
    self->request(publisher, ask_timeout, stats_atom_v)
        .then(
            [g, answered](session_stats& s) {
              g->publishers.push_back(std::move(s));
              answered();
            },
            ignore);
  answered(); // the 1 counted for the loop itself
}

} // namespace

void counter_floor::apply(session_stats& sum) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto raise = [](uint64_t& value, uint64_t& high) {
    value = std::max(value, high);
    high = value;
  };
  raise(sum.published, high_.published);
  raise(sum.unrouted, high_.unrouted);
  raise(sum.delivered, high_.delivered);
  raise(sum.dropped, high_.dropped);
  raise(sum.refused, high_.refused);
  raise(sum.denied, high_.denied);
  raise(sum.expired, high_.expired);
  raise(sum.requests.requests, high_.requests.requests);
  raise(sum.requests.replies, high_.requests.replies);
  raise(sum.requests.no_responders, high_.requests.no_responders);
  raise(sum.requests.timeouts, high_.requests.timeouts);
  raise(sum.requests.late_replies, high_.requests.late_replies);
  auto& h = sum.delivery_latency;
  auto& high = high_.delivery_latency;
  if (h.count < high.count) {
    h = high; // the histogram as one: its buckets must add up to its count
    return;
  }
  high = h;
}

void collect_stats(stats_sources sources, const pb::StatsRequest& request,
                   stats_callback done) {
  auto g = std::make_shared<stats_gathering>();
  g->request = request;
  if (request.limit() != 0)
    g->limit = std::min(request.limit(), max_stats_limit);
  g->sources = std::move(sources);
  g->done = std::move(done);
  auto& sys = *g->sources.sys;
  sys.spawn([g](caf::event_based_actor* self) {
    auto query = stats_query{g->request.topic_pattern(), g->limit};
    self->request(g->sources.router, ask_timeout, stats_atom_v, query)
        .then(
            [self, g](router_view& view) {
              g->view = std::move(view);
              ask_all(self, g);
            },
            [self, g](caf::error& err) {
              pb::StatsReply empty;
              g->done(empty, to_error_info(err));
              self->quit();
            });
  });
}

} // namespace tb
