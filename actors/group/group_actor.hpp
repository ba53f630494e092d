// A consumer group: holds every message matching its pattern until a member
// acks it, handing each to exactly one member at a time (spec 6).
//
// A delivery's life:
//
//   held --dispatch--> in flight --ack--> done
//     ^                   |  |  \--reject / max_deliveries--> dead letter
//     |                   |  \--nack (delay)--> parked --due--+
//     +---- ack_wait passed / member gone / nack -------------+
//
// The group decides who may receive a delivery: active members with free
// credit (max_in_flight) that are not stalled, and for a redelivery those the
// message has not been to yet if one of them has credit. The group's policy
// (actors/policies/group_policy.hpp) picks the member among them; the rest is
// the same for every policy.
//
// Timers: one wake-up (a delayed tick_atom) at the ledger's earliest
// deadline, delay, due time of a scheduled message or expiry of the message
// at the front of a priority level; none per message
// (actors/group/group_stalls.cpp, actors/group/group_expiry.cpp).
//
// Stalls: a member whose deliveries expire `stall_after` times in a row
// (those expiring together count once), with no answer from its session in
// between, is stalled: no new deliveries
// until its session answers anything (ack, nack, reject, in progress, even a
// late one).

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <caf/stateful_actor.hpp>

#include "actors/broker_context.hpp"
#include "actors/group/group_ledger.hpp"
#include "actors/group/group_replication.hpp"
#include "actors/limited_logs.hpp"
#include "actors/meters.hpp"
#include "actors/policies/group_policy.hpp"
#include "actors/protocol.hpp"
#include "log/rate_limiter.hpp"

namespace tb {

/// What every group actor needs from the broker.
struct group_context {
  /// Gives dead letters their message ids.
  std::shared_ptr<id_sequence> message_ids = std::make_shared<id_sequence>();
  /// Gives deliveries their ids, unique per attempt across the broker.
  std::shared_ptr<id_sequence> delivery_ids = std::make_shared<id_sequence>();
  /// The publisher that routes dead letters.
  session_actor dead_letters;
  /// The most unacked deliveries one member may hold, whatever it asks.
  uint32_t max_in_flight_limit = 65536;
  /// Returns the Unix time in nanoseconds, read once when the group starts
  /// to map message times (TTL, due times) to the actor clock; null = the
  /// system clock. Tests pin it so that simulated time decides.
  std::function<int64_t()> unix_now;
  /// The state a promoted replica handed over (issue 32): the group starts
  /// holding its messages, those in flight held again at once; null: empty.
  std::shared_ptr<const group_seed> seed;
};

/// State of a group actor.
struct group_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.group";

  /// The group's name.
  std::string group;
  /// The settings, defaults filled in.
  group_settings settings;
  /// Broker-wide handles and counters.
  group_context ctx;
  /// Held messages, deliveries in flight, deadlines.
  group_ledger ledger;
  /// The members, active or still holding deliveries.
  member_directory members;
  /// Picks the member of each delivery (`settings.policy`).
  std::unique_ptr<group_policy> policy;
  /// When the wake-ups sent to itself (tick_atom) are due, earliest first.
  std::multiset<group_ledger::time_point> wakes;
  /// Members with deliveries expired since their session last answered.
  std::unordered_set<uint64_t> expiring;
  /// The lines about members stalling and answering again, at most 5 of
  /// each per 10 s (a client decides how often it stalls).
  log::rate_limiter stall_lines;
  /// Counters.
  group_counters counters;
  /// The lines of its dead letters, rate limited.
  dead_letter_log dead_letter_lines;
  /// Messages received per second (counted per enqueued batch).
  rate_meter received_rate;
  /// Messages acked per second (counted per ack frame).
  rate_meter acked_rate;
  /// Where the replies of held requests go, by message id.
  std::unordered_map<uint64_t, reply_target> requests;
  /// The size of `requests` that triggers a sweep of those past their
  /// deadline.
  std::size_t request_prune_at = 64;
  /// The key of the next accepted message (`group_ledger::held::key`).
  uint64_t next_key = 1;
  /// The replica and the stream to it (issue 32).
  group_replication repl;
};

/// The group's handle type with its state.
using group_pointer = group_actor::stateful_pointer<group_state>;

/// Held messages a policy may pass over in one dispatch round while waiting
/// for a particular member (key_hash); bounds the work of one round.
constexpr std::size_t policy_lookahead = 1024;

/// The headers a group adds to a message it dead-letters (spec 6).
namespace dead_letter_headers {
/// The topic the message was first published to; kept when a dead letter is
/// dead-lettered again.
inline constexpr std::string_view original_topic =
    "x-tinybroker-original-topic";
/// The id of the message as first published; kept like `original_topic`.
inline constexpr std::string_view original_id = "x-tinybroker-original-id";
/// The group that dead-lettered it last.
inline constexpr std::string_view group = "x-tinybroker-group";
/// The attempts that group made.
inline constexpr std::string_view attempts = "x-tinybroker-attempts";
/// Why: `rejected`, `max_deliveries` or `expired`.
inline constexpr std::string_view reason = "x-tinybroker-reason";
/// Every group that dead-lettered it, in order, joined by ','; a group never
/// dead-letters a message twice (it drops it instead), so loops end.
inline constexpr std::string_view path = "x-tinybroker-dead-letter-path";
} // namespace dead_letter_headers

/// Publishes `held`, which leaves the group unanswered for `reason`
/// (`rejected`, `max_deliveries`), to the group's dead letter topic with the
/// dead letter headers; drops it instead under `dead_letter = "none"` or
/// when it already passed through this group
/// (actors/group/group_dead_letters.cpp).
void dead_letter(group_pointer self, const group_ledger::held& held,
                 const char* reason);

/// Holds `held` again at the head of the queue, or dead-letters it when it
/// used up its deliveries, or expires it when it is past its TTL or the
/// group's max_age.
void requeue(group_pointer self, group_ledger::held held);

/// Holds `msgs` again at the head of the queue, the first of them first in
/// line, dead-lettering (in their order) those that used up their
/// deliveries and expiring those past their TTL or max_age.
void requeue_in_order(group_pointer self, std::vector<group_ledger::held> msgs);

/// Expires `held`, which waited past its TTL or the group's max_age: counts
/// it and dead-letters it with reason `expired`, or drops it, per
/// `on_expiry` (actors/group/group_expiry.cpp).
void expire(group_pointer self, const group_ledger::held& held);

/// Returns true if `held` expired by now.
bool has_expired(group_pointer self, const group_ledger::held& held);

/// Sets the ledger's timing rules from the settings and `ctx.unix_now`.
void init_timing(group_pointer self);

/// Holds `msg`, a message the group accepted as `key`, delivered `attempts`
/// times so far, apart until its due time if that is still ahead, else at
/// the back of its level's queue.
void hold_new(group_pointer self, message_ref msg, uint64_t key,
              uint32_t attempts = 0);

/// Moves due scheduled messages to their levels and expires waiting
/// messages past their time, at most `schedule_slice` of each per call, so
/// that a million due at once never stalls the group's other work: the next
/// wake-up comes at once and takes the next slice.
void release_due(group_pointer self);

/// Scheduled messages released, and expired ones taken, per wake-up at
/// most (a slice, with the deliveries it makes, costs a few ms at most
/// with a million scheduled; docs/performance.md).
constexpr std::size_t schedule_slice = 1024;

/// How far ahead the group schedules its wake-up at most; a later due time
/// is reached by a further wake-up. Bounds the wake-ups it has pending, with
/// `wake_slack`, to `wake_horizon / wake_slack + 1`.
constexpr std::chrono::milliseconds wake_horizon{1000};

/// A due time at most this much before a pending wake-up adds no new one.
constexpr std::chrono::milliseconds wake_slack{2};

/// Makes sure a wake-up is pending at or just after the ledger's next due
/// time (actors/group/group_stalls.cpp).
void schedule_wake(group_pointer self);

/// Forgets the earliest pending wake-up: it arrived.
void wake_arrived(group_pointer self);

/// Counts a timeout of the member `key`: `n` of its deliveries expired
/// together; marks it stalled (and logs it) after `stall_after` in a row.
void note_expired(group_pointer self, uint64_t key, std::size_t n);

/// Clears the expiries in a row of the members of `session`, which answered
/// something, and un-stalls them.
void note_answer(group_pointer self, const session_actor& session);

/// Forgets the expiries of the member `key`, which is leaving.
void forget_expiries(group_pointer self, uint64_t key);

/// Returns true if a member that may receive and that `held` has not been
/// to yet exists.
bool has_new_receiver(group_pointer self, const group_ledger::held& held);

/// Returns true if `held` used up its deliveries: `max_deliveries` attempts
/// made, and it went to two members or more, or no other member may take it.
bool used_up(group_pointer self, const group_ledger::held& held);

/// Returns the group's counters, rates, ages and members, as the Stats view
/// and ListGroups show them (actors/group/group_stats.cpp).
group_info describe_group(group_pointer self);

/// Drops the messages waiting for a delivery, queued or delayed, and counts
/// them as dropped (so that received = acked + dead-lettered + dropped +
/// held stays true); deliveries in flight stay. Returns how many it dropped
/// (actors/group/group_stats.cpp).
uint64_t purge_pending(group_pointer self);
/// Ends the group, deleted or `replaced` by another node's group of its
/// name (a two-owner conflict, a newer ownership term): its members are
/// told it was deleted, or to re-join (their routers then name the other
/// group). What it held is dropped; returns how many messages
/// (actors/group/group_stats.cpp).
uint64_t end_group(group_pointer self, bool replaced);
/// Holds `msgs` (a publish batch's share), refusing those beyond the
/// group's bounds; dispatches.
enqueue_reply enqueue(group_pointer self, std::vector<message_ref>& msgs);

/// Hands held messages to the members the policy picks, one batch per
/// member, while some member has credit (actors/group/group_actor.cpp).
void dispatch(group_pointer self);

/// Holds the request `msg` as one message, its reply going to `target`:
/// NO_RESPONDERS when the group has no active member, RESOURCE_EXHAUSTED
/// when it is full (actors/group/group_requests.cpp).
caf::result<caf::ok_atom> hold_request(group_pointer self, message_ref& msg,
                                       const reply_target& target);

/// Forgets the reply target of `message_id` (acked or refused).
void forget_request(group_pointer self, uint64_t message_id);

/// Gives a delivery of a held request its reply target.
void attach_reply(group_pointer self, group_delivery& delivery);

// -- replicas (actors/group/group_replication.cpp, issue 32) -----------------

/// Attaches `replica` (null: detaches) at ownership `term`: monitors it and
/// sends it the full state in chunks; a lower term than the current one is
/// refused.
void attach_replica(group_pointer self, replica_actor replica, uint64_t term);

/// Takes the replica's acknowledgement of everything up to `seq`: sends the
/// enqueue replies that waited for it.
void replica_acked(group_pointer self, uint64_t seq);

/// Handles a down message if it is the replica's (answers what waited for
/// it and drops it); returns false if `msg` is about another actor.
bool replica_down(group_pointer self, const caf::down_msg& msg);

/// Sends the replica what this handler run changed, in order: the accepted
/// batch, the returned, the removed, then `out`'s deliveries (made in one
/// dispatch round). Call only with a replica attached.
void replicate_round(
    group_pointer self,
    const std::unordered_map<uint64_t, group_delivery_batch>& out);

/// Returns the reply to an enqueue of `n` messages: at once without a
/// replica, else once the replica acknowledged the batch.
caf::result<enqueue_reply> confirm_enqueue(group_pointer self,
                                           enqueue_reply reply, std::size_t n);

/// Confirms every enqueue reply waiting for the replica at once (the group
/// is deleted).
void release_waiting(group_pointer self);

/// Refuses every enqueue reply waiting for the replica, `node_unavailable`
/// with `why`: the replica went away before it acknowledged their batches,
/// which the owner still holds, so they may or may not be taken. A confirm
/// always means two copies, or none was attached when the batch came.
void refuse_waiting(group_pointer self, const std::string& why);

/// Holds the messages of `ctx.seed`, a promoted replica's state: those in
/// flight again at the head of their level, attempts kept, the others in
/// order; keys continue from the seed's.
void start_from_seed(group_pointer self);

/// Records that the message `key` came back from a member (for the
/// replica); nothing without one.
inline void note_returned(group_pointer self, uint64_t key) {
  auto& repl = self->state.repl;
  if (repl.replica)
    repl.returned.push_back(key);
}

/// Records that the message `key` left the group (for the replica);
/// nothing without one.
inline void note_removed(group_pointer self, uint64_t key) {
  auto& repl = self->state.repl;
  if (repl.replica)
    repl.removed.push_back(key);
}

/// Runs the group `name` with `settings` (defaults filled in) under the
/// policy registered as `settings.policy` (round_robin if unknown).
group_actor::behavior_type group_actor_impl(group_pointer self,
                                            std::string name,
                                            group_settings settings,
                                            group_context ctx);

} // namespace tb
