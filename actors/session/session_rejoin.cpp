// Re-joining a group whose owner node was lost (cluster, issue 30 point 4).
//
// When the handle of a member's group goes down with
// `remote_link_unreachable`, its node is gone and what it held is lost; when
// the group says another owner replaced it (a two-owner conflict, a newer
// ownership term), what it held is dropped. The
// membership then re-joins by itself through the router, with the same
// name, pattern and member spec, keeping its subscription id: the router
// creates the group on its next owner. Until the router has taken its own
// `peer_down` it may still answer node_unavailable or the lost group, so
// attempts back off (50 ms doubling to 1 s) and end after 30 s with an
// Unsubscribed frame saying why. An Unsubscribe meanwhile ends it. While
// this node has no quorum (the majority rule) no attempt goes to the
// router: the group is not re-created on a minority's side.
//
//   member --down(node lost)--> rejoining --join answered--> member
//                                  |  \--failed: retry after the delay
//                                  \--30 s or a lasting refusal--> ended

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "actors/session/session_actor.hpp"

namespace tb {

namespace {

using namespace std::chrono_literals;

// The first delay between attempts, doubled after each up to the largest.
constexpr caf::timespan session_rejoin_first_delay = 50ms;
constexpr caf::timespan session_rejoin_max_delay = 1s;

// How long a membership keeps re-joining before it ends.
constexpr caf::timespan session_rejoin_give_up = 30s;

// Returns true if a failed join may succeed later: the group's node is gone
// or the router did not answer in time.
bool session_rejoin_retryable(const caf::error& err) {
  if (err == caf::sec::request_timeout ||
      err == caf::sec::request_receiver_down)
    return true;
  return to_error_info(err).code == ec::node_unavailable;
}

// Says why an attempt failed.
std::string session_rejoin_why(const caf::error& err) {
  if (err == caf::sec::request_receiver_down)
    return "the router still named the lost group";
  if (err == caf::sec::request_timeout)
    return "the router did not answer in time";
  return to_error_info(err).text;
}

std::string session_rejoin_text(caf::timespan span) {
  return std::to_string(
             std::chrono::duration_cast<std::chrono::milliseconds>(span)
                 .count()) +
         " ms";
}

// Ends the membership `id` that could not re-join, saying why.
void session_rejoin_end(session_pointer self, uint64_t id, membership& m,
                        const std::string& why) {
  auto reason = "group \"" + m.group +
                "\": its owner node is gone and re-joining it failed: " + why;
  self->state.logs.note(log::level::warn,
                        "group membership ended: its owner "
                        "node is gone and re-joining failed",
                        {{"group", m.group},
                         {"subscription", id},
                         {"attempts", m.rejoin_attempt},
                         {"reason", why}});
  self->state.ctx.rejoins->count_ended();
  end_membership(self, id, reason);
}

// Schedules the next attempt of `m`, or ends it once the give-up time has
// passed (the last attempt comes at that time).
void session_rejoin_later(session_pointer self, uint64_t id, membership& m) {
  auto elapsed = self->clock().now() - m.rejoin_since;
  if (elapsed >= session_rejoin_give_up) {
    session_rejoin_end(self, id, m,
                       "no live owner within " +
                           session_rejoin_text(session_rejoin_give_up) +
                           " (last: " + m.rejoin_error + ")");
    return;
  }
  auto delay = std::min(m.rejoin_delay, session_rejoin_give_up - elapsed);
  ++m.rejoin_attempt;
  self->delayed_send(self, delay, rejoin_atom_v, id, m.rejoin_attempt);
  m.rejoin_delay = std::min(m.rejoin_delay * 2, session_rejoin_max_delay);
}

} // namespace

void rejoin_lost_memberships(session_pointer self, const caf::actor_addr& group,
                             const char* why) {
  auto& st = self->state;
  std::unordered_set<uint64_t> lost;
  for (auto& [id, m] : st.memberships)
    if (m.handle && m.handle.address() == group)
      lost.insert(id);
  if (lost.empty())
    return;
  // What the client holds from the lost group: its answers go nowhere (they
  // count as stale); what it has not seen yet is dropped.
  for (auto i = st.delivery_owners.begin(); i != st.delivery_owners.end();)
    i = i->second.address() == group ? st.delivery_owners.erase(i)
                                     : std::next(i);
  if (!st.group_outbox.empty()) {
    ring_queue<group_delivery> kept;
    while (!st.group_outbox.empty()) {
      if (lost.count(st.group_outbox.front().subscription_id) == 0)
        kept.push_back(std::move(st.group_outbox.front()));
      st.group_outbox.pop_front();
    }
    st.group_outbox = std::move(kept);
  }
  st.ctx.rejoins->count_lost(lost.size());
  auto now = self->clock().now();
  for (auto id : lost) {
    auto& m = st.memberships[id];
    m.handle = group_actor{};
    m.early.clear();
    m.lost = group;
    m.rejoining = true;
    m.rejoin_since = now;
    m.rejoin_delay = session_rejoin_first_delay;
    m.rejoin_error = why;
    try_rejoin(self, id, ++m.rejoin_attempt);
  }
}

void try_rejoin(session_pointer self, uint64_t id, uint64_t attempt) {
  auto& st = self->state;
  auto i = st.memberships.find(id);
  if (i == st.memberships.end() || !i->second.rejoining ||
      i->second.rejoin_attempt != attempt)
    return; // left meanwhile, or a stale timer
  auto& m = i->second;
  if (!st.ctx.quorum->has_quorum()) {
    // The majority rule: a node without quorum does not re-create the
    // group on its side of a partition; the membership waits for quorum.
    m.rejoin_error = "no quorum: " + st.ctx.quorum->read().describe();
    session_rejoin_later(self, id, m);
    return;
  }
  self->request(st.ctx.router, caf::duration{group_watch::reply_timeout},
                join_atom_v, m.group, m.pattern, self_handle(self), m.spec)
      .then(
          [self, id, attempt](group_actor group) {
            auto& st = self->state;
            auto i = st.memberships.find(id);
            if (i == st.memberships.end() || !i->second.rejoining ||
                i->second.rejoin_attempt != attempt) {
              // Unsubscribed while re-joining: leave at once.
              if (i == st.memberships.end() || i->second.handle != group)
                self->send(group, leave_atom_v, self_handle(self), id);
              return;
            }
            auto& m = i->second;
            if (group.address() == m.lost) {
              // The router does not know yet that the node is gone.
              m.rejoin_error = "the router still named the lost group";
              session_rejoin_later(self, id, m);
              return;
            }
            m.handle = group;
            m.rejoining = false;
            st.ctx.rejoins->count_rejoined();
            m.lost = caf::actor_addr{};
            watch_group(self, group, m.group);
            for (auto& item : m.early)
              st.group_outbox.push_back(std::move(item));
            m.early.clear();
            st.logs.note(
                log::level::info, "group re-joined on its next owner",
                {{"group", m.group},
                 {"subscription", id},
                 {"attempts", attempt},
                 {"after_ms",
                  static_cast<uint64_t>(
                      std::chrono::duration_cast<std::chrono::milliseconds>(
                          self->clock().now() - m.rejoin_since)
                          .count())}});
            flush(self);
          },
          [self, id, attempt](caf::error& err) {
            auto& st = self->state;
            auto i = st.memberships.find(id);
            if (i == st.memberships.end() || !i->second.rejoining ||
                i->second.rejoin_attempt != attempt)
              return;
            auto& m = i->second;
            m.rejoin_error = session_rejoin_why(err);
            if (session_rejoin_retryable(err))
              session_rejoin_later(self, id, m);
            else
              session_rejoin_end(self, id, m, m.rejoin_error);
            flush(self);
          });
}

} // namespace tb
