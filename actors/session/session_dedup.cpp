// De-duplication on the publish path (issue 28): the topic shards say which
// messages' ids were seen within their window; the session routes the others.

#include <algorithm>
#include <memory>
#include <vector>

#include "actors/session/session_actor.hpp"
#include "actors/topic/dedup_table.hpp"

namespace tb {

namespace {

// Routes the jobs at the front of the dedup queue whose shards answered.
void route_answered(session_pointer self) {
  auto& queue = self->state.dedup_queue;
  while (!queue.empty() && queue.front()->dedup_done) {
    auto job = std::move(queue.front());
    queue.pop_front();
    route_and_confirm(self, std::move(job));
  }
}

} // namespace

// The job waits in the session's dedup queue, with
// any job behind it, so that jobs are routed in publish order (spec 4)
// while the session reads on: the shards check one batch while the session
// reads the next. One question per shard, however many ids.
void check_duplicates(session_pointer self, std::shared_ptr<publish_job> job) {
  auto& st = self->state;
  if (job->dedup.empty() && st.dedup_queue.empty()) {
    route_and_confirm(self, std::move(job));
    return;
  }
  st.dedup_queue.push_back(job);
  struct question {
    caf::actor_addr shard;
    dedup_query query;
    std::vector<uint32_t> accepted; // the job's index of each entry
  };
  std::vector<question> questions;
  // One route and one question per run of messages to one topic (a run's
  // keys were hashed from one topic hash in make_publish_job).
  auto& runs = job->dedup_runs;
  for (size_t r = 0; r < runs.size(); ++r) {
    auto begin = runs[r];
    auto end = r + 1 < runs.size() ? runs[r + 1]
                                   : static_cast<uint32_t>(job->dedup.size());
    auto& first = job->accepted[job->dedup[begin].first];
    auto* route = find_route(st, *job, first->topic());
    if (route == nullptr || !(*route)->shard)
      continue; // refused below, or a test's route without a shard
    auto& shard = (*route)->shard;
    auto q = std::find_if(questions.begin(), questions.end(),
                          [&](const question& x) { return x.shard == shard; });
    if (q == questions.end())
      q = questions.insert(questions.end(), question{shard, {}, {}});
    auto window = (*route)->dedup_window_ms;
    auto count = end - begin;
    q->query.keys.reserve(q->query.keys.size() + 2 * count);
    q->query.ids.reserve(q->query.ids.size() + count);
    q->query.windows_ms.resize(q->query.windows_ms.size() + count, window);
    q->accepted.reserve(q->accepted.size() + count);
    for (auto i = begin; i < end; ++i) {
      auto& [k, key] = job->dedup[i];
      q->query.keys.push_back(key.h1);
      q->query.keys.push_back(key.h2);
      q->query.ids.push_back(job->accepted[k]->id());
      q->accepted.push_back(k);
    }
  }
  if (questions.empty()) {
    job->dedup_done = true;
    route_answered(self);
    return;
  }
  job->pending_dedup = questions.size();
  for (auto& q : questions) {
    auto count_down = [self, job] {
      if (--job->pending_dedup == 0) {
        job->dedup_done = true;
        route_answered(self);
      }
    };
    auto shard = caf::actor_cast<topic_shard_actor>(q.shard);
    if (!shard) { // the broker is stopping: nothing to check against
      count_down();
      continue;
    }
    self->request(shard, caf::infinite, dedup_atom_v, std::move(q.query))
        .then(
            [job, count_down,
             accepted = std::move(q.accepted)](dedup_reply& reply) {
              for (size_t j = 0; j < reply.positions.size(); ++j) {
                auto k = accepted.at(reply.positions[j]);
                auto& outcome = job->outcomes[job->positions[k]];
                outcome.duplicate = true;
                outcome.id = reply.first_ids.at(j);
              }
              count_down();
            },
            // A shard that died checked nothing: route the messages.
            [count_down](caf::error&) { count_down(); });
  }
}

} // namespace tb
