// The publish path of a session actor: validate, give ids, resolve routes
// the cache lacks, send each destination one batch, confirm.
//
// Guarded by the load generator's S1/S2 scenarios (tools/): measure before
// and after any change here.

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "actors/session/publish_destinations.hpp"
#include "actors/session/session_actor.hpp"
#include "actors/session/session_quorum.hpp"
#include "actors/session/unary_call.hpp"
#include "actors/topic/dedup_table.hpp"
#include "routing/topic.hpp"
#include "tinybroker.pb.h"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

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

} // namespace

const route_ref* find_route(session_state& st, publish_job& job,
                            std::string_view name) {
  if (auto* cached = st.routes.find(name))
    return cached;
  if (auto i = job.resolved.find(std::string{name}); i != job.resolved.end())
    return &i->second;
  return nullptr;
}

// Sends every destination its batch, in publish order, then confirms. A
// delayed message goes to the groups as any other (they hold it apart) and,
// for the fan-out subscriptions of its route, to the route's topic shard,
// which hands it to them when it falls due.
void route_and_confirm(session_pointer self, std::shared_ptr<publish_job> job) {
  auto& st = self->state;
  std::vector<std::pair<session_actor, fanout_batch>> batches;
  std::unordered_map<caf::actor_addr, size_t> index;
  std::vector<group_share> shares;
  std::vector<delayed_share> delayed;
  // Each peer's messages, in publish order (cluster; never for messages
  // that came from a link: one hop, no loops).
  std::vector<std::pair<link_out_actor, std::vector<message_ref>>> links;
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
    if (msg->delay_ms() != 0) {
      if (!(*route)->fanout.empty())
        add_delayed(delayed, *route, msg, k);
    } else {
      for (auto& target : (*route)->fanout) {
        auto [pos, added] =
            index.emplace(target.session.address(), batches.size());
        if (added)
          batches.emplace_back(target.session, fanout_batch{});
        batches[pos->second].second.items.push_back(
            fanout_item{msg, target.subscription_id});
      }
    }
    if (!(*route)->links.empty() && !job->from_link)
      add_link_share(links, **route, msg);
    if (job->from_link)
      continue; // groups are not interest: the origin node's groups hold it
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
  for (auto& [link, msgs] : links)
    self->send(link, link_atom_v, std::move(msgs));
  // Messages from a link were counted as published on their own node.
  if (!job->from_link)
    st.stats.published += job->accepted.size() - duplicates;
  if (shares.empty() && delayed.empty())
    finish_publish(self, *job);
  else
    enqueue_later(self, std::move(job), std::move(shares), std::move(delayed));
}

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

void finish_publish(session_pointer self, publish_job& job) {
  auto& st = self->state;
  --st.publishing;
  if (job.from_link) {
    job.link_done.deliver(caf::ok_atom_v);
    return;
  }
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

std::shared_ptr<publish_job>
make_publish_job(session_state& st,
                 google::protobuf::RepeatedPtrField<pb::Message>& messages,
                 std::string_view msg_id_base, const access_grant& grant) {
  auto job = std::make_shared<publish_job>();
  job->outcomes.resize(static_cast<size_t>(messages.size()));
  if (msg_id_base.size() > max_msg_id_bytes) {
    // A frame that numbers its ids wrongly routes none of its messages.
    auto err = make_error_info(
        ec::invalid_request,
        "msg_id_base of the publish has " + std::to_string(msg_id_base.size()) +
            " bytes; the limit is " + std::to_string(max_msg_id_bytes));
    for (auto& outcome : job->outcomes)
      outcome.error = err;
    return job;
  }
  auto accepted_at = now_unix_nanos();
  // The timings of the messages, only for a batch that sets any (the common
  // batch sets none and allocates nothing for them).
  std::vector<message_timing> timings;
  size_t valid = 0;
  for (int i = 0; i < messages.size(); ++i) {
    auto& outcome = job->outcomes[static_cast<size_t>(i)];
    auto& msg = messages[i];
    outcome.error = check_message(st, msg, grant);
    if (!outcome.error &&
        (msg.ttl_ms() != 0 || msg.delay_ms() != 0 ||
         msg.not_before_unix_ms() != 0 || msg.priority() != 0)) {
      if (timings.empty())
        timings.resize(static_cast<size_t>(messages.size()));
      outcome.error =
          check_timing(st, msg, accepted_at, timings[static_cast<size_t>(i)]);
    }
    if (!outcome.error)
      ++valid;
  }
  if (valid == 0)
    return job;
  auto next_id = st.ctx.ids->reserve(valid);
  job->accepted.reserve(valid);
  job->positions.reserve(valid);
  // The dedup keys hash a run of messages to one topic's name once.
  std::string_view hashed_topic;
  dedup_topic_hash topic_hash;
  std::optional<numbered_msg_ids> numbered;
  if (!msg_id_base.empty())
    numbered.emplace(msg_id_base);
  for (int i = 0; i < messages.size(); ++i) {
    auto& outcome = job->outcomes[static_cast<size_t>(i)];
    if (outcome.error)
      continue;
    auto& msg = messages[i];
    std::string_view msg_id = msg.msg_id();
    if (msg_id.empty() && numbered)
      msg_id = numbered->at(static_cast<uint64_t>(i));
    if (!msg_id.empty()) {
      if (job->dedup.empty() || msg.topic() != hashed_topic) {
        if (job->dedup.empty())
          job->dedup.reserve(valid);
        hashed_topic = msg.topic();
        topic_hash = make_dedup_topic_hash(hashed_topic);
        job->dedup_runs.push_back(static_cast<uint32_t>(job->dedup.size()));
      }
      // Field by field, from registers (keep_in_registers says why).
      auto key = make_dedup_key(topic_hash, msg_id);
      keep_in_registers(key.h1, key.h2);
      auto& entry = job->dedup.emplace_back();
      entry.first = static_cast<uint32_t>(job->accepted.size());
      entry.second.h1 = key.h1;
      entry.second.h2 = key.h2;
    }
    outcome.id = next_id++;
    job->accepted.push_back(message_record::make(
        outcome.id, accepted_at, msg.topic(), msg.payload(), msg.key(),
        msg.headers(),
        timings.empty() ? message_timing{} : timings[static_cast<size_t>(i)]));
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
    refuse_group_publishes(st, *job); // the majority rule (cluster)
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
            refuse_group_publishes(self->state, *job);
            check_duplicates(self, job);
          },
          [self, job, missing](caf::error& err) {
            // The topics stay unresolved: their messages are refused below
            // with the router's reason.
            for (auto& topic : missing)
              job->lookup_errors.emplace(topic, to_error_info(err));
            job->pending_lookups = 0;
            refuse_group_publishes(self->state, *job);
            check_duplicates(self, job);
          });
}

} // namespace tb
