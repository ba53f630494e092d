// A session: one client's conversation, one actor per gRPC Session stream.
//
// It validates and publishes the client's messages (routing them straight
// to the destination sessions through its cache of topic routes), manages
// the client's subscriptions, and buffers deliveries until the stream can
// take them. Without a frame sink it serves unary Publish calls instead.
//
//   open --(client half-closes)--> closing --(frames written)--> done
//     \____________(stream ends / broker stops: exit)____________/

#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/broker_context.hpp"
#include "actors/protocol.hpp"
#include "actors/ring_queue.hpp"
#include "actors/session/delivery_buffer.hpp"
#include "actors/session/frame_sink.hpp"
#include "actors/session/group_watch.hpp"
#include "actors/session/publish_job.hpp"
#include "actors/session/request_book.hpp"
#include "actors/session/route_cache.hpp"
#include "actors/session/session_log.hpp"

namespace google::protobuf {
template <typename Element>
class RepeatedPtrField;
} // namespace google::protobuf

namespace tinybroker::v1 {
class ClientFrame;
class Message;
class Reply;
class Request;
class ServerFrame;
class Subscribe;
class SubscribeBatch;
class Unsubscribe;
} // namespace tinybroker::v1

namespace tb {

/// One consumer group membership of a session.
struct membership {
  /// The group's name.
  std::string group;
  /// The group, once joined.
  group_actor handle;
  /// The unacked deliveries this membership may hold: its share of
  /// `limits.max_in_flight_per_session`.
  uint32_t max_in_flight = 0;
  /// Deliveries that arrived before the join was confirmed: the group
  /// dispatches as soon as it has the member, while the confirmation takes
  /// the longer way through the router. Written after the Subscribed frame.
  std::vector<group_delivery> early;
  /// The pattern it joined with, to re-join the same way.
  std::string pattern;
  /// What it told the group about itself, to re-join the same way.
  member_spec spec;
  /// True while it re-joins by itself: its group's node was lost (cluster;
  /// actors/session/session_rejoin.cpp).
  bool rejoining = false;
  /// The lost group it re-joins after (an answer naming it again is retried).
  caf::actor_addr lost;
  /// When re-joining started.
  caf::actor_clock::time_point rejoin_since;
  /// The delay before the next attempt.
  caf::timespan rejoin_delay{0};
  /// The current attempt; a timer of another attempt is stale.
  uint64_t rejoin_attempt = 0;
  /// Why the last attempt failed.
  std::string rejoin_error;
};

/// State of a session actor.
struct session_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.session";

  /// The broker's shared settings and handles.
  broker_context ctx;
  /// Where frames go; null for the unary publisher.
  frame_sink_ptr sink;
  /// The client's address (empty for the unary publisher).
  std::string peer;
  /// The name the client chose for itself (empty if none).
  std::string client_name;
  /// What the client's token allows (everything when auth is off; the
  /// unary publisher checks each call's own grant instead).
  access_grant grant;
  /// The pattern of every subscription, fan-out and group, by id (with
  /// auth on only): a reload that narrows the token's permissions ends
  /// those no longer allowed.
  std::unordered_map<uint64_t, std::string> patterns;
  /// When the session started.
  std::chrono::steady_clock::time_point started;
  /// Routes of the topics this session publishes to.
  route_cache routes{1};
  /// Fan-out subscriptions and their unwritten deliveries.
  delivery_buffer deliveries{65536, 64u << 20};
  /// Group memberships by subscription id.
  std::unordered_map<uint64_t, membership> memberships;
  /// The group of every unanswered group delivery, by delivery id.
  std::unordered_map<uint64_t, group_actor> delivery_owners;
  /// Group deliveries not yet written (bounded by the members' credit).
  ring_queue<group_delivery> group_outbox;
  /// Requests sent and received, with their deadlines.
  request_book requests;
  /// The remote groups this session monitors, and what waits on each.
  group_watch watch;
  /// Frames other than deliveries, written first.
  ring_queue<std::unique_ptr<tinybroker::v1::ServerFrame>> control;
  /// Client frames processed but not yet released to the reader, because
  /// the client does not read what the session writes.
  size_t owed_reads = 0;
  /// Publish jobs started and not yet answered; a closing session ends
  /// only when none is left, so no confirm is lost.
  size_t publishing = 0;
  /// Publish jobs waiting, in arrival order, for the topic shards to say
  /// which of their messages are duplicates (and the jobs behind them):
  /// routed from the front, so that the session reads on meanwhile and
  /// still routes in publish order (spec 4).
  std::deque<std::shared_ptr<publish_job>> dedup_queue;
  /// True once the client stopped sending.
  bool closing = false;
  /// True once the stream is gone with publish frames still on their way:
  /// the session routes them, then stops with `gone_reason` (see on_exit).
  bool stream_gone = false;
  /// Why the stream went, once it did.
  caf::error gone_reason;
  /// True while a route sweep timer is pending.
  bool sweep_scheduled = false;
  /// Counters.
  session_stats stats;
  /// Its log lines: refusals, slow-consumer losses, its end.
  session_log logs;

  /// Returns the counters as of now (without the mailbox length).
  session_stats current_stats() const;

  /// Sends the final counters of a stream's session to the router, which
  /// keeps the totals of ended sessions.
  ~session_state();
};

/// The session's handle type with its state.
using session_pointer = session_actor::stateful_pointer<session_state>;

/// Runs a session for one stream, writing to `sink`, for a client allowed
/// what `grant` allows; with a null `sink` it serves unary Publish calls
/// (each with the grant of its call).
session_actor::behavior_type session_actor_impl(session_pointer self,
                                                broker_context ctx,
                                                frame_sink_ptr sink,
                                                access_grant grant);

// -- internals shared by the session's source files ---------------------------

/// Starts publishing `job`: resolves missing routes, then routes it.
void run_publish(session_pointer self, std::shared_ptr<publish_job> job);

/// Answers the publisher of `job` once every destination took the batch:
/// the confirm (or the unary reply), and the refusals counted and logged.
void finish_publish(session_pointer self, publish_job& job);
/// Returns the session's own handle, as its peers know it.
session_actor self_handle(session_pointer self);

/// Finds the route of topic `name` in the session's cache or among `job`'s
/// lookups; null if neither has it.
const route_ref* find_route(session_state& st, publish_job& job,
                            std::string_view name);

/// Sends every destination of `job` its messages (duplicates skipped), in
/// publish order, then confirms (actors/session/session_publish.cpp).
void route_and_confirm(session_pointer self, std::shared_ptr<publish_job> job);

/// Asks the topic shards which of `job`'s messages with a msg_id are
/// duplicates, then routes the others, in publish order behind any job still
/// waiting for its answers (actors/session/session_dedup.cpp).
void check_duplicates(session_pointer self, std::shared_ptr<publish_job> job);

/// Caches a route a lookup returned, telling the router about evictions.
void cache_route(session_pointer self, const route_ref& route);

/// Returns why `msg` cannot be published by a client with `grant`, or no
/// error (actors/session/publish_checks.cpp).
error_info check_message(const session_state& st,
                         const tinybroker::v1::Message& msg,
                         const access_grant& grant);

/// Returns why the TTL, delay and priority of `msg` cannot be taken, or no
/// error; fills `timing` (the due time as an offset from `accepted_at`).
error_info check_timing(const session_state& st,
                        const tinybroker::v1::Message& msg, int64_t accepted_at,
                        message_timing& timing);

/// Validates `messages` and turns the valid ones into accepted messages;
/// messages without a msg_id of their own are numbered from `msg_id_base`
/// when it is not empty (`numbered_msg_ids`); `grant` says which topics the
/// client may publish to.
std::shared_ptr<publish_job> make_publish_job(
    session_state& st,
    google::protobuf::RepeatedPtrField<tinybroker::v1::Message>& messages,
    std::string_view msg_id_base, const access_grant& grant);

/// Queues an error frame that names the refused request.
void queue_error(session_pointer self, uint64_t request_id, const char* request,
                 uint64_t subscription_id, const error_info& error);

/// Logs a refused request (rate limited) of this session's client, or of
/// `peer` (a unary call's client) if given.
void log_refusal(session_pointer self, std::string_view request,
                 const error_info& error, std::string_view peer = {});

/// Writes what the stream can take now.
void flush(session_pointer self);

/// Handles an exit message with `reason`: stops the session, after routing
/// the publish frames it read if its stream is gone (the bridge's exit).
void on_exit(session_pointer self, caf::error reason);

/// Releases one processed client frame to the reader, or owes it while
/// the client does not read.
void release_frame(session_pointer self);

/// Returns the number of subscriptions, fan-out and group.
size_t subscription_count(const session_state& st);

/// The answer owed to one Subscribe or SubscribeBatch frame: a Subscribe is
/// answered with Subscribed, a batch with one SubscribedBatch once every
/// entry is in place or refused.
struct subscribe_answer {
  /// The frame's request id.
  uint64_t request_id = 0;
  /// True for a SubscribeBatch frame.
  bool batch = false;
  /// Entries still waiting for the router or their group.
  std::size_t pending = 0;
  /// A batch's entries in place so far.
  std::vector<uint64_t> ids;
};

/// Shared by the entries of one frame while they wait for their answers.
using subscribe_answer_ptr = std::shared_ptr<subscribe_answer>;

/// Answers a Subscribe frame: checks it, then subscribes (fan-out) or joins
/// its group.
void subscribe(session_pointer self, uint64_t request_id,
               const tinybroker::v1::Subscribe& req);

/// Answers a SubscribeBatch frame: each entry as `subscribe` would, the
/// fan-out ones in one request to the router.
void subscribe_batch(session_pointer self, uint64_t request_id,
                     const tinybroker::v1::SubscribeBatch& req);

/// Says subscription `id` of `answer`'s frame is in place.
void confirm_subscription(session_pointer self, subscribe_answer& answer,
                          uint64_t id);

/// Marks one pending entry of `answer` done; the last one of a batch queues
/// the SubscribedBatch frame.
void settle_subscription(session_pointer self, subscribe_answer& answer);

/// Answers an Unsubscribe frame.
void unsubscribe(session_pointer self, uint64_t request_id,
                 const tinybroker::v1::Unsubscribe& req);

/// Takes the permissions of a reloaded token: ends each subscription they
/// no longer allow, with an Unsubscribed frame that says why.
void change_grant(session_pointer self, access_grant grant);

/// Joins a consumer group for a Subscribe entry (already validated),
/// answering through `answer`.
void join_group(session_pointer self, const subscribe_answer_ptr& answer,
                const tinybroker::v1::Subscribe& req);

/// Leaves the group of `subscription_id`; false if it is no membership. The
/// Unsubscribed frame carries `reason` (empty when the client asked).
bool leave_group(session_pointer self, uint64_t subscription_id,
                 const std::string& reason = {});

/// Forwards an Ack, Nack or InProgress frame to the groups concerned.
void answer_deliveries(session_pointer self,
                       const tinybroker::v1::ClientFrame& frame);

/// Takes group deliveries from the group that sent them.
void accept_group_deliveries(session_pointer self, group_delivery_batch& batch);

/// Forgets deliveries that went to another attempt.
void forget_deliveries(session_state& st, const std::vector<uint64_t>& ids);

/// Ends a membership the broker ended (its group was deleted).
void end_membership(session_pointer self, uint64_t subscription_id,
                    const std::string& reason);

/// Moves up to `max` group deliveries into `frame`; returns how many.
size_t drain_group_outbox(session_state& st, tinybroker::v1::ServerFrame& frame,
                          size_t max);

// -- groups on other nodes (actors/session/group_watch.cpp, session_rejoin.cpp)

/// Returns the timeout of a request to `group`: bounded for a remote group
/// (`group_watch::reply_timeout`), infinite for a local one.
caf::duration group_reply_timeout(session_pointer self,
                                  const group_actor& group);

/// Monitors `group` once if it is remote (learning its name unless `name`
/// gives it); returns true if it is remote.
bool watch_group(session_pointer self, const group_actor& group,
                 const std::string& name = {});

/// Ends the wait `token` on `group`: true if the caller answers it now, false
/// if it was answered already (its node was lost).
bool end_group_wait(session_pointer self, const group_actor& group,
                    uint64_t token);

/// Returns the name of the watched `group`, or empty if unknown.
std::string group_name_of(session_pointer self, const group_actor& group);

/// Handles a down message: a group whose node was lost answers everything
/// that waits on it (node_unavailable) and its memberships re-join.
void group_down(session_pointer self, caf::down_msg& msg);

/// Starts re-joining every membership of the lost group `group`, dropping
/// what the client held from it; `why` says how it was lost.
void rejoin_lost_memberships(session_pointer self, const caf::actor_addr& group,
                             const char* why = "its node was lost");

/// Runs re-join attempt `attempt` of membership `subscription_id`.
void try_rejoin(session_pointer self, uint64_t subscription_id,
                uint64_t attempt);

// -- request/reply (actors/session/session_requests.cpp, session_replies.cpp)

/// Answers a Request frame, or a unary Request call when `unary` is set:
/// checks it, then hands it to the responders (NO_RESPONDERS at once when
/// there are none) and waits for the first reply until its timeout.
void start_request(session_pointer self, uint64_t request_id,
                   tinybroker::v1::Request& req, unary_request_ptr unary = {});

/// Answers a Reply frame: forwards the reply to the caller's session if the
/// handle names a request this session received and has not answered.
void send_reply(session_pointer self, uint64_t request_id,
                tinybroker::v1::Reply& reply);

/// Takes a fan-out request for one of the client's subscriptions.
void accept_request(session_pointer self, request_delivery& delivery);

/// Makes a group delivery that carries a request answerable (its reply
/// handle is its delivery id).
void open_group_request(session_pointer self, const group_delivery& item,
                        const group_actor& group);

/// Makes sure a wake-up (`rtimeout_atom`) is pending at or before the
/// earliest deadline of the session's requests, sent and received.
void schedule_request_wake(session_pointer self);

/// Takes the reply to the client's request `key`; false if it is late (the
/// request was answered or timed out).
bool take_reply(session_pointer self, uint64_t key, reply_body& body);

/// Fails the requests whose timeout passed and forgets received requests
/// past their deadline.
void expire_requests(session_pointer self);

/// Returns true if a fan-out request delivery may be written (its
/// subscription is confirmed) or dropped (its subscription ended).
bool requests_ready(const session_state& st);

/// Moves up to `max` fan-out request deliveries of confirmed subscriptions
/// into `frame`, holding back those of unconfirmed ones; returns how many.
size_t drain_requests(session_state& st, tinybroker::v1::ServerFrame& frame,
                      size_t max);

} // namespace tb
