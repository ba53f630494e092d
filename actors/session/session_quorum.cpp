// The majority rule on a session's paths; see session_quorum.hpp.

#include "actors/session/session_quorum.hpp"

#include <utility>
#include <vector>

#include "tinybroker.pb.h"

namespace tb {

error_info quorum_refusal(session_state& st, const std::string& what) {
  auto& quorum = *st.ctx.quorum;
  if (quorum.has_quorum())
    return {};
  auto reading = quorum.read();
  if (reading.has_quorum) // it came back meanwhile
    return {};
  quorum.count_refusal();
  return make_error_info(ec::no_quorum,
                         "no quorum: " + reading.describe() + "; " + what);
}

const char* answer_name(const tinybroker::v1::ClientFrame& frame) {
  using kind = tinybroker::v1::ClientFrame;
  switch (frame.kind_case()) {
  case kind::kAck:
    return "ack";
  case kind::kNack:
    return frame.nack().requeue() ? "nack" : "reject";
  default:
    return "in_progress";
  }
}

error_info refuse_answers(session_state& st,
                          const tinybroker::v1::ClientFrame& frame) {
  if (st.ctx.quorum->has_quorum())
    return {};
  return quorum_refusal(
      st, std::string{"groups refuse acks, nacks, rejects and in-progress "
                      "answers until this node sees a majority ("} +
              answer_name(frame) +
              " not applied: the deliveries stay in flight and come back "
              "after the group's ack_wait)");
}

void refuse_group_publishes(session_state& st, publish_job& job) {
  // A dead letter comes from a group of this node (a sinkless session
  // without a unary call); a link's messages go to fan-out only.
  if (st.ctx.quorum->has_quorum() || job.from_link || (!job.unary && !st.sink))
    return;
  // Each accepted message's new index, or -1 once refused.
  std::vector<int64_t> moved(job.accepted.size(), -1);
  size_t kept = 0;
  for (size_t k = 0; k < job.accepted.size(); ++k) {
    auto topic = job.accepted[k]->topic();
    auto* route = find_route(st, job, topic);
    if (route != nullptr && !(*route)->groups.empty()) {
      auto& outcome = job.outcomes[job.positions[k]];
      auto groups = (*route)->groups.size();
      auto err = quorum_refusal(
          st, "the message to \"" + std::string{topic} + "\" routes to " +
                  (groups == 1 ? std::string{"a consumer group, which refuses"}
                               : std::to_string(groups) +
                                     " consumer groups, which refuse") +
                  " publishes until this node sees a majority (fan-out-only "
                  "topics are served)");
      if (err) {
        outcome.id = 0;
        outcome.error = std::move(err);
        continue;
      }
    }
    moved[k] = static_cast<int64_t>(kept);
    if (kept != k) {
      job.accepted[kept] = std::move(job.accepted[k]);
      job.positions[kept] = job.positions[k];
    }
    ++kept;
  }
  if (kept == job.accepted.size())
    return;
  job.accepted.resize(kept);
  job.positions.resize(kept);
  // The dedup entries of the messages kept, in runs as before (a run that
  // lost messages may now be empty: it goes).
  std::vector<std::pair<uint32_t, dedup_key>> dedup;
  std::vector<uint32_t> runs;
  for (size_t r = 0; r < job.dedup_runs.size(); ++r) {
    auto begin = job.dedup_runs[r];
    auto end = r + 1 < job.dedup_runs.size()
                   ? job.dedup_runs[r + 1]
                   : static_cast<uint32_t>(job.dedup.size());
    bool started = false;
    for (auto i = begin; i < end; ++i) {
      auto to = moved[job.dedup[i].first];
      if (to < 0)
        continue;
      if (!started) {
        runs.push_back(static_cast<uint32_t>(dedup.size()));
        started = true;
      }
      dedup.emplace_back(static_cast<uint32_t>(to), job.dedup[i].second);
    }
  }
  job.dedup = std::move(dedup);
  job.dedup_runs = std::move(runs);
}

} // namespace tb
