#include "actors/session/publish_destinations.hpp"

#include <algorithm>
#include <memory>

namespace tb {

void enqueue_later(session_pointer self, std::shared_ptr<publish_job> job,
                   std::vector<group_share> shares,
                   std::vector<delayed_share> delayed) {
  job->pending_groups = shares.size() + delayed.size();
  auto count_down = [self, job] {
    if (--job->pending_groups == 0)
      finish_publish(self, *job);
  };
  // Marks the outcomes of the refused positions with `code` and `reason`.
  auto refuse = [job](const std::vector<uint32_t>& positions,
                      const enqueue_reply& reply, ec code) {
    for (auto i : reply.refused) {
      auto& outcome = job->outcomes[job->positions[positions[i]]];
      if (!outcome.error)
        outcome.error = make_error_info(code, reply.reason);
    }
  };
  // Refuses every position of a share with `err`.
  auto refuse_all = [refuse](const std::vector<uint32_t>& positions,
                             const error_info& err) {
    enqueue_reply failed;
    for (uint32_t i = 0; i < positions.size(); ++i)
      failed.refused.push_back(i);
    failed.reason = err.text;
    refuse(positions, failed, err.code);
  };
  for (auto& share : shares) {
    // A remote group is watched: if its node is lost first, the share is
    // refused at its down message (its reply never comes), and a reply
    // after that, or the bounded timeout, finds nothing left to answer.
    auto group = share.group;
    auto positions =
        std::make_shared<std::vector<uint32_t>>(std::move(share.positions));
    uint64_t token = 0;
    if (watch_group(self, group))
      token = self->state.watch.wait(
          group.address(),
          [count_down, refuse_all, positions](const error_info& err) {
            refuse_all(*positions, err);
            count_down();
          });
    self->request(group, group_reply_timeout(self, group), enqueue_atom_v,
                  std::move(share.messages))
        .then(
            [self, group, token, count_down, refuse,
             positions](enqueue_reply& reply) {
              if (!end_group_wait(self, group, token))
                return;
              refuse(*positions, reply, reply.code);
              count_down();
            },
            [self, group, token, count_down, refuse_all,
             positions](caf::error& err) {
              if (!end_group_wait(self, group, token))
                return;
              // No reply in time from a remote group: unavailable. A group
              // that ended first (deleted, its node stopping, or dropped for
              // a newer owner) bounced the batch: not taken by it, but it is
              // not confirmed either, since another owner may hold the
              // group now (retry).
              if (err == caf::sec::request_timeout)
                refuse_all(*positions,
                           group_no_reply_error(group_name_of(self, group)));
              else
                refuse_all(*positions,
                           group_ended_error(group_name_of(self, group)));
              count_down();
            });
  }
  for (auto& share : delayed) {
    auto shard = caf::actor_cast<topic_shard_actor>(share.shard);
    if (!shard) {
      // The broker is stopping: its shards are gone.
      enqueue_reply gone;
      for (uint32_t i = 0; i < share.positions.size(); ++i)
        gone.refused.push_back(i);
      gone.reason = "the topic's shard is gone: the broker is shutting down";
      refuse(share.positions, gone, ec::shutting_down);
      count_down();
      continue;
    }
    // Both handlers name the positions (only one of them runs).
    self->request(shard, caf::infinite, schedule_atom_v, std::move(share.batch))
        .then(
            [count_down, refuse,
             positions = share.positions](enqueue_reply& reply) {
              refuse(positions, reply, ec::schedule_full);
              count_down();
            },
            [count_down, refuse, positions = share.positions](caf::error& err) {
              enqueue_reply failed;
              for (uint32_t i = 0; i < positions.size(); ++i)
                failed.refused.push_back(i);
              failed.reason = to_error_info(err).text;
              refuse(positions, failed, ec::internal);
              count_down();
            });
  }
}

void add_delayed(std::vector<delayed_share>& delayed, const route_ref& route,
                 const message_ref& msg, size_t k) {
  auto pos =
      std::find_if(delayed.begin(), delayed.end(), [&](const delayed_share& x) {
        return x.shard == route->shard;
      });
  if (pos == delayed.end())
    pos = delayed.insert(delayed.end(), delayed_share{route->shard, {}, {}});
  pos->batch.items.push_back(delayed_item{msg, route});
  pos->positions.push_back(static_cast<uint32_t>(k));
}

void add_link_share(
    std::vector<std::pair<link_out_actor, std::vector<message_ref>>>& links,
    const route& route, const message_ref& msg) {
  for (auto& link : route.links) {
    auto pos = std::find_if(links.begin(), links.end(),
                            [&](const auto& x) { return x.first == link; });
    if (pos == links.end())
      pos = links.insert(links.end(), {link, {}});
    pos->second.push_back(msg);
  }
}

} // namespace tb
