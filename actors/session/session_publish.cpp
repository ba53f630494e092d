// The publish path of a session actor: validate, give ids, resolve routes
// the cache lacks, send each destination one batch, confirm.
//
// Guarded by the load generator's S1/S2 scenarios (tools/): measure before
// and after any change here.

#include <algorithm>
#include <chrono>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "actors/session/session_actor.hpp"
#include "actors/session/unary_call.hpp"
#include "actors/topic/dedup_table.hpp"
#include "routing/topic.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

int64_t now_unix_nanos() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(system_clock::now().time_since_epoch())
      .count();
}

// Returns why `msg` cannot be published, or no error.
error_info check_message(const session_state& st, const pb::Message& msg,
                         const access_grant& grant) {
  if (auto err = validate_topic(msg.topic(), st.ctx.names()))
    return err;
  if (is_system_topic(msg.topic()))
    return make_error_info(ec::reserved_topic,
                           "topic \"" + msg.topic() +
                               "\" belongs to the broker; clients may not "
                               "publish to it");
  if (!may_publish(grant, msg.topic()))
    return make_error_info(ec::permission_denied, describe_client(grant) +
                                                      " may not publish to \"" +
                                                      msg.topic() + "\"");
  auto size = msg.payload().size() + msg.key().size();
  for (auto& [name, value] : msg.headers())
    size += name.size() + value.size();
  if (msg.msg_id().size() > max_msg_id_bytes)
    return make_error_info(ec::invalid_request,
                           "msg_id of a message to \"" + msg.topic() +
                               "\" has " + std::to_string(msg.msg_id().size()) +
                               " bytes; the limit is " +
                               std::to_string(max_msg_id_bytes));
  if (size > st.ctx.limits.max_message_bytes)
    return make_error_info(ec::message_too_large,
                           "message to \"" + msg.topic() + "\" has " +
                               std::to_string(size) + " bytes; the limit is " +
                               std::to_string(st.ctx.limits.max_message_bytes));
  return {};
}

// Finds the route of `topic` in the cache or among the job's lookups.
const route_ref* find_route(session_state& st, publish_job& job,
                            std::string_view name) {
  if (auto* cached = st.routes.find(name))
    return cached;
  if (auto i = job.resolved.find(std::string{name}); i != job.resolved.end())
    return &i->second;
  return nullptr;
}

// Writes one result per published message.
void fill_results(const publish_job& job,
                  google::protobuf::RepeatedPtrField<pb::PublishResult>& out) {
  out.Reserve(static_cast<int>(job.outcomes.size()));
  for (auto& outcome : job.outcomes) {
    auto* result = out.Add();
    result->set_id(outcome.id);
    if (outcome.duplicate)
      result->set_duplicate(true);
    if (outcome.error) {
      auto* err = result->mutable_error();
      err->set_code(grpc_status_code(outcome.error.code));
      err->set_reason(std::string{to_string(outcome.error.code)});
      err->set_message(outcome.error.text);
    }
  }
}

// Returns the refusals of a job as one error naming the first problem and
// how many messages were refused, or no error if none was.
error_info refusals_of(const publish_job& job) {
  const error_info* first = nullptr;
  size_t refused = 0;
  for (auto& outcome : job.outcomes)
    if (outcome.error) {
      ++refused;
      if (first == nullptr)
        first = &outcome.error;
    }
  if (first == nullptr)
    return {};
  return make_error_info(first->code,
                         std::to_string(refused) + " of " +
                             std::to_string(job.outcomes.size()) +
                             " messages refused; the first: " + first->text);
}

// Answers the publisher once every destination took the batch.
void finish_publish(session_pointer self, publish_job& job) {
  auto& st = self->state;
  --st.publishing;
  auto refused_before = st.stats.refused;
  for (auto& outcome : job.outcomes)
    if (outcome.error) {
      ++st.stats.refused;
      if (outcome.error.code == ec::permission_denied)
        ++st.stats.denied;
    }
  // The refusals as one error, built only if there are any.
  auto refusals =
      st.stats.refused != refused_before ? refusals_of(job) : error_info{};
  if (job.unary) {
    fill_results(job, *job.unary->reply->mutable_results());
    if (refusals)
      log_refusal(self, "Publish", refusals, job.unary->peer);
    job.unary->complete(error_info{});
    return;
  }
  if (job.confirm) {
    auto frame = std::make_unique<pb::ServerFrame>();
    auto* confirm = frame->mutable_publish_confirm();
    confirm->set_request_id(job.request_id);
    fill_results(job, *confirm->mutable_results());
    st.control.push_back(std::move(frame));
    if (refusals)
      log_refusal(self, "publish", refusals);
  } else if (refusals) {
    // Without a confirm, refused messages still get an answer: one error
    // frame per publish frame, naming the first problem and how many were
    // refused (queue_error logs it).
    queue_error(self, job.request_id, "publish", 0, refusals);
  }
  release_frame(self);
  flush(self);
}

// The messages one publish batch routes to one group, with their positions
// among the job's accepted messages.
struct group_share {
  group_actor group;
  std::vector<message_ref> messages;
  std::vector<uint32_t> positions;
};

// Asks each group to hold its share; a refusal (a full group) marks the
// message's outcome, naming the group. Confirms once every group answered.
void enqueue_in_groups(session_pointer self, std::shared_ptr<publish_job> job,
                       std::vector<group_share> shares) {
  job->pending_groups = shares.size();
  for (auto& share : shares) {
    auto count_down = [self, job] {
      if (--job->pending_groups == 0)
        finish_publish(self, *job);
    };
    self->request(share.group, caf::infinite, enqueue_atom_v,
                  std::move(share.messages))
        .then(
            [job, count_down,
             positions = std::move(share.positions)](enqueue_reply& reply) {
              for (auto i : reply.refused) {
                auto& outcome = job->outcomes[job->positions[positions[i]]];
                if (!outcome.error)
                  outcome.error = make_error_info(ec::group_full, reply.reason);
              }
              count_down();
            },
            // A group deleted meanwhile holds nothing: not the publisher's
            // problem.
            [count_down](caf::error&) { count_down(); });
  }
}

// Sends every destination its batch, in publish order, then confirms.
void route_and_confirm(session_pointer self, std::shared_ptr<publish_job> job) {
  auto& st = self->state;
  std::vector<std::pair<session_actor, fanout_batch>> batches;
  std::unordered_map<caf::actor_addr, size_t> index;
  std::vector<group_share> shares;
  size_t duplicates = 0;
  for (size_t k = 0; k < job->accepted.size(); ++k) {
    auto& msg = job->accepted[k];
    if (job->outcomes[job->positions[k]].duplicate) {
      ++duplicates;
      continue;
    }
    auto* route = find_route(st, *job, msg->topic());
    if (route == nullptr) {
      auto failed = job->lookup_errors.find(std::string{msg->topic()});
      job->outcomes[job->positions[k]].error =
          failed != job->lookup_errors.end()
              ? failed->second
              : make_error_info(ec::internal, "no route for topic \"" +
                                                  std::string{msg->topic()} +
                                                  "\" (the router failed)");
      continue;
    }
    if ((*route)->empty()) {
      ++st.stats.unrouted;
      continue;
    }
    for (auto& target : (*route)->fanout) {
      auto [pos, added] =
          index.emplace(target.session.address(), batches.size());
      if (added)
        batches.emplace_back(target.session, fanout_batch{});
      batches[pos->second].second.items.push_back(
          fanout_item{msg, target.subscription_id});
    }
    for (auto& group : (*route)->groups) {
      auto pos =
          std::find_if(shares.begin(), shares.end(),
                       [&](const group_share& x) { return x.group == group; });
      if (pos == shares.end())
        pos = shares.insert(shares.end(), group_share{group, {}, {}});
      pos->messages.push_back(msg);
      pos->positions.push_back(static_cast<uint32_t>(k));
    }
  }
  for (auto& [dest, batch] : batches)
    self->send(dest, deliver_atom_v, std::move(batch));
  st.stats.published += job->accepted.size() - duplicates;
  if (shares.empty())
    finish_publish(self, *job);
  else
    enqueue_in_groups(self, std::move(job), std::move(shares));
}

// Routes the jobs at the front of the dedup queue whose shards answered.
void route_answered(session_pointer self) {
  auto& queue = self->state.dedup_queue;
  while (!queue.empty() && queue.front()->dedup_done) {
    auto job = std::move(queue.front());
    queue.pop_front();
    route_and_confirm(self, std::move(job));
  }
}

// Asks the topic shards whether the messages with a msg_id are duplicates,
// then routes the others. The job waits in the session's dedup queue, with
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
    caf::strong_actor_ptr shard;
    dedup_query query;
    std::vector<uint32_t> accepted; // the job's index of each entry
  };
  std::vector<question> questions;
  for (auto& [k, key] : job->dedup) {
    auto& msg = job->accepted[k];
    auto* route = find_route(st, *job, msg->topic());
    if (route == nullptr || !(*route)->shard)
      continue; // refused below, or a test's route without a shard
    auto& shard = (*route)->shard;
    auto q = std::find_if(questions.begin(), questions.end(),
                          [&](const question& x) { return x.shard == shard; });
    if (q == questions.end())
      q = questions.insert(questions.end(), question{shard, {}, {}});
    q->query.keys.push_back(key.h1);
    q->query.keys.push_back(key.h2);
    q->query.ids.push_back(msg->id());
    q->query.windows_ms.push_back((*route)->dedup_window_ms);
    q->accepted.push_back(k);
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
    self->request(caf::actor_cast<topic_shard_actor>(q.shard), caf::infinite,
                  dedup_atom_v, std::move(q.query))
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

// Caches a route a lookup returned, telling the router about evictions.
void cache_route(session_pointer self, const route_ref& route) {
  auto& st = self->state;
  if (auto evicted = st.routes.insert(route))
    self->send(st.ctx.router, detach_atom_v, *evicted,
               caf::actor_cast<session_actor>(self));
  if (!st.sweep_scheduled) {
    st.sweep_scheduled = true;
    self->delayed_send(self, st.ctx.route_idle_timeout, tick_atom_v);
  }
}

} // namespace

std::shared_ptr<publish_job>
make_publish_job(session_state& st,
                 google::protobuf::RepeatedPtrField<pb::Message>& messages,
                 const access_grant& grant) {
  auto job = std::make_shared<publish_job>();
  job->outcomes.resize(static_cast<size_t>(messages.size()));
  size_t valid = 0;
  for (int i = 0; i < messages.size(); ++i) {
    auto& outcome = job->outcomes[static_cast<size_t>(i)];
    outcome.error = check_message(st, messages[i], grant);
    if (!outcome.error)
      ++valid;
  }
  if (valid == 0)
    return job;
  auto next_id = st.ctx.ids->reserve(valid);
  auto accepted_at = now_unix_nanos();
  job->accepted.reserve(valid);
  job->positions.reserve(valid);
  for (int i = 0; i < messages.size(); ++i) {
    auto& outcome = job->outcomes[static_cast<size_t>(i)];
    if (outcome.error)
      continue;
    auto& msg = messages[i];
    if (!msg.msg_id().empty())
      job->dedup.emplace_back(static_cast<uint32_t>(job->accepted.size()),
                              make_dedup_key(msg.topic(), msg.msg_id()));
    outcome.id = next_id++;
    job->accepted.push_back(message_record::make(outcome.id, accepted_at,
                                                 msg.topic(), msg.payload(),
                                                 msg.key(), msg.headers()));
    job->positions.push_back(static_cast<uint32_t>(i));
  }
  return job;
}

void run_publish(session_pointer self, std::shared_ptr<publish_job> job) {
  auto& st = self->state;
  ++st.publishing;
  // The topics without a cached route, each once.
  std::unordered_set<std::string_view> seen;
  std::vector<std::string> missing;
  for (auto& msg : job->accepted)
    if (st.routes.find(msg->topic()) == nullptr &&
        seen.insert(msg->topic()).second)
      missing.emplace_back(msg->topic());
  if (missing.empty()) {
    check_duplicates(self, job);
    return;
  }
  // Awaiting holds back every later message of this session, so that the
  // batch is routed before anything the client sends after it. One lookup
  // for all missing topics: one round trip, however many there are.
  job->pending_lookups = 1;
  auto topics = missing;
  self->request(st.ctx.router, caf::infinite, resolve_atom_v, std::move(topics),
                caf::actor_cast<session_actor>(self))
      .await(
          [self, job, missing](route_list& routes) {
            auto& st = self->state;
            for (std::size_t i = 0; i < missing.size(); ++i) {
              if (i >= routes.size() || !routes[i].ptr) {
                // Refused: the shard held limits.max_topics topics.
                job->lookup_errors.emplace(
                    missing[i],
                    make_error_info(
                        ec::limit_exceeded,
                        "topic \"" + missing[i] +
                            "\" would be one more than limits.max_topics = " +
                            std::to_string(st.ctx.limits.max_topics) +
                            " live topics (idle topics expire after "
                            "topic_idle_timeout)"));
                continue;
              }
              cache_route(self, routes[i]);
              job->resolved.emplace(missing[i], std::move(routes[i]));
            }
            job->pending_lookups = 0;
            check_duplicates(self, job);
          },
          [self, job, missing](caf::error& err) {
            // The topics stay unresolved: their messages are refused below
            // with the router's reason.
            for (auto& topic : missing)
              job->lookup_errors.emplace(topic, to_error_info(err));
            job->pending_lookups = 0;
            check_duplicates(self, job);
          });
}

} // namespace tb
