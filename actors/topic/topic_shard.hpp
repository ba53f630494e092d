// A topic shard: owns the routes of every topic whose name hashes to it, and
// keeps the route caches of their publishing sessions up to date.
//
// A topic used to be an actor of its own; an actor costs about 1.5 KB before
// it holds anything, and spawning, expiring and asking 100,000 of them one by
// one made the router the bottleneck (issue 15). A shard holds its topics as
// plain entries (about 0.5 KB each), creates a batch of them in one message
// and expires them in one sweep.
//
// Lifecycle of a topic inside its shard:
//
//   created (attach) --> used --(no subscriber, no cacher, no group)--> idle
//                          ^                                            |
//                          +--------- attach / add_dest / add_group ----+
//                                                                       |
//                                         idle for topic_idle_timeout   v
//                                                                     gone
//
// Publishers never send messages through a shard: they cache the route and
// send straight to the destinations, so one publisher's messages take one
// path and keep their order across topics (spec 4).

#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "actors/protocol.hpp"
#include "actors/topic/dedup_table.hpp"
#include "actors/topic/delayed_fanout.hpp"
#include "config/broker_config.hpp"
#include "routing/topic_tree.hpp"

namespace tb {

/// The broker-wide number of live topics, held below `limits.max_topics`;
/// shared by the topic shards (a lock-free counter, like the message ids).
/// The shards count their delayed fan-out messages in another one, against
/// `limits.max_delayed_fanout`.
class topic_quota {
public:
  /// Allows at most `max` live topics.
  explicit topic_quota(std::size_t max) : max_(max) {}

  /// Counts one more topic; returns false (counting nothing) at the limit.
  bool try_acquire() noexcept {
    auto live = live_.load(std::memory_order_relaxed);
    while (live < max_)
      if (live_.compare_exchange_weak(live, live + 1,
                                      std::memory_order_relaxed))
        return true;
    return false;
  }

  /// Counts one topic less.
  void release() noexcept {
    live_.fetch_sub(1, std::memory_order_relaxed);
  }

  /// Returns the number of live topics.
  std::size_t live() const noexcept {
    return live_.load(std::memory_order_relaxed);
  }

  /// Returns the most it allows.
  std::size_t max() const noexcept {
    return max_;
  }

private:
  std::atomic<std::size_t> live_{0};
  std::size_t max_;
};

/// One topic as its shard holds it.
struct shard_topic {
  /// The current route, shared with every cacher.
  route_ref current;
  /// The sessions caching the route (its publishers).
  std::vector<session_actor> cachers;
  /// When the topic became idle (valid while `idle`).
  std::chrono::steady_clock::time_point idle_since;
  /// Neighbours in the shard's list of idle topics, oldest first.
  shard_topic* idle_prev = nullptr;
  /// Neighbours in the shard's list of idle topics, oldest first.
  shard_topic* idle_next = nullptr;
  /// True while the topic is in the idle list.
  bool idle = false;
  /// For each link in the route (cluster): how many of its peer's patterns
  /// match the topic; the link leaves the route when that reaches 0.
  std::vector<std::pair<caf::actor_addr, uint32_t>> link_counts;
};

/// How one session uses one topic of the shard.
struct topic_use {
  /// True if the session caches the route.
  bool caches = false;
  /// Its fan-out subscriptions the route delivers to.
  uint32_t subscriptions = 0;
};

/// What a shard knows about one session it monitors.
struct shard_session {
  /// The session.
  session_actor handle;
  /// The topics it caches or receives from.
  std::unordered_map<shard_topic*, topic_use> uses;
};

/// State of a topic shard.
struct topic_shard_state {
  /// The actor's name in logs.
  static inline const char* name = "tinybroker.topic_shard";

  /// The topics by name.
  std::unordered_map<std::string, shard_topic> topics;
  /// The same names as a token trie, for matching patterns.
  topic_tree index;
  /// The sessions using a topic, by address.
  std::unordered_map<caf::actor_addr, shard_session> sessions;
  /// The oldest idle topic; the list is in the order topics became idle.
  shard_topic* idle_head = nullptr;
  /// The youngest idle topic.
  shard_topic* idle_tail = nullptr;
  /// True while an expiry tick is due.
  bool tick_scheduled = false;
  /// How long an idle topic lives on.
  std::chrono::milliseconds idle_timeout{60000};
  /// The broker-wide topic count.
  std::shared_ptr<topic_quota> quota;
  /// Topics created so far; a topic's versions start at `created << 32`,
  /// above any version an earlier topic of the same name reached.
  uint64_t created = 0;
  /// Topics expired so far.
  uint64_t expired = 0;
  /// The delayed fan-out messages of its topics, until their due time.
  delayed_fanout delayed{SIZE_MAX, nullptr};
  /// When its one due timer fires, if one is armed.
  std::optional<std::chrono::steady_clock::time_point> armed;
  /// The window a topic's message ids are remembered for.
  std::chrono::milliseconds dedup_window{120000};
  /// The message ids of the shard's topics (made with the shard's share of
  /// `dedup.max_ids`).
  std::unique_ptr<dedup_table> dedup;
  /// The de-duplication window of each group with one longer than
  /// `dedup_window` (`add_group`), until `del_group`.
  std::unordered_map<caf::actor_addr, std::chrono::milliseconds> group_windows;
  /// True while a `dedup_tick` is due.
  bool dedup_tick_scheduled = false;
};

/// The shard's handle type with its state.
using topic_shard_pointer =
    topic_shard_actor::stateful_pointer<topic_shard_state>;

/// The most idle topics one expiry tick removes (about a millisecond of
/// work); the next batch follows `expiry_pause` later, so a bulk expiry
/// never holds up a resolve or a subscribe for long, nor occupies a worker
/// thread.
constexpr std::size_t expiry_batch = 256;

/// The pause between two expiry batches of one shard.
constexpr std::chrono::milliseconds expiry_pause{1};

/// The most delayed messages one due timer hands out; the next batch
/// follows `due_pause` later (as with `expiry_batch`).
constexpr std::size_t due_batch = 4096;

/// The pause between two batches of due messages of one shard.
constexpr std::chrono::milliseconds due_pause{1};

/// How a shard bounds the delayed fan-out messages it holds.
struct delayed_limits {
  /// The most per topic (`limits.max_delayed_fanout_per_topic`).
  std::size_t per_topic = SIZE_MAX;
  /// The count over all shards (`limits.max_delayed_fanout`); none if null.
  std::shared_ptr<topic_quota> quota;
};

/// Runs a topic shard whose idle topics live `idle_timeout`, counting its
/// topics in `quota`, holding delayed fan-out messages within `delayed`; it
/// remembers message ids for `dedup.window`, at most `dedup.max_ids` of them.
topic_shard_actor::behavior_type
topic_shard_impl(topic_shard_pointer self,
                 std::chrono::milliseconds idle_timeout,
                 std::shared_ptr<topic_quota> quota,
                 delayed_limits delayed = {}, dedup_config dedup = {});

/// Answers which messages of `query` are duplicates, remembering the others'
/// ids (actors/topic/topic_shard_dedup.cpp).
dedup_reply shard_dedup(topic_shard_pointer self, dedup_query& query);

/// Returns the de-duplication window of a topic routing to `groups`, in
/// milliseconds: the longest of the shard's window and the groups' windows.
uint64_t topic_dedup_window(const topic_shard_state& st,
                            const std::vector<group_actor>& groups);

/// Forgets the message ids whose window ended and schedules the next tick.
void shard_dedup_tick(topic_shard_pointer self);

// -- internals shared by the shard's source files -----------------------------

/// Adds `session` as a cacher of `topic`, monitoring it on first sight.
void add_cacher(topic_shard_pointer self, shard_topic& topic,
                const session_actor& session);

/// Changed routes waiting to go to their cachers: one message per session,
/// however many of its topics changed (a wildcard subscribe may change
/// 100,000 routes; a request each would cost CAF a pending response each).
struct route_pushes {
  /// Each session and the routes it gets.
  std::vector<std::pair<session_actor, route_list>> batches;
  /// The index of each session's batch.
  std::unordered_map<caf::actor_addr, std::size_t> index;
};

/// Installs `next` as the route of `topic` and stages it for every cacher.
void install_route(shard_topic& topic, std::shared_ptr<route> next,
                   route_pushes& pushes);

/// Sends the staged routes, one request per session; calls `on_answer()`
/// once per session when it confirmed (or died). Returns the number of
/// requests sent.
std::size_t send_pushes(topic_shard_pointer self, route_pushes& pushes,
                        const std::function<void()>& on_answer);

/// Moves `topic` into or out of the idle list, as its users say.
void update_idleness(topic_shard_pointer self, shard_topic& topic);

/// Expires the idle topics whose time has come (at most `expiry_batch`).
void expire_topics(topic_shard_pointer self);

/// Adds each subscription's target to every topic its pattern matches;
/// once every cacher of a changed route has it (one push per cacher for the
/// whole batch), tells `requester` with `added_dest_atom` and `ticket` (a
/// message, not a CAF response).
void shard_add_targets(topic_shard_pointer self,
                       const fanout_subscriptions& subscriptions,
                       uint64_t ticket, const caf::actor& requester);

/// Removes `target` from every topic `pattern` matches.
void shard_remove_target(topic_shard_pointer self, const std::string& pattern,
                         const fanout_target& target);

/// Adds `group`, whose topics remember message ids for `dedup_window` (0:
/// the shard's window), to every topic `pattern` matches, in the place of
/// `replaces` where a route holds it (a group's new owner: one route version,
/// so a publish never finds the topic without the group); answers once every
/// cacher of a changed route has it.
caf::result<caf::ok_atom>
shard_add_group(topic_shard_pointer self, const std::string& pattern,
                const group_actor& group,
                std::chrono::milliseconds dedup_window = {},
                const group_actor& replaces = {});

/// Removes `group` from every topic `pattern` matches.
void shard_remove_group(topic_shard_pointer self, const std::string& pattern,
                        const group_actor& group);

/// Holds the delayed messages of `batch` until their due time, arming the
/// shard's timer; answers which were refused at a limit, and why.
enqueue_reply shard_schedule(topic_shard_pointer self, delayed_batch& batch);

/// Hands the delayed messages that fell due (at most `due_batch`) to the
/// fan-out subscriptions of their routes and re-arms the timer.
void shard_fire_due(topic_shard_pointer self);

/// Returns when the shard's earliest delayed message falls due, in
/// milliseconds since the Unix epoch; 0 when it holds none.
int64_t next_due_unix_ms(topic_shard_pointer self);

/// Adds `link` to every topic one of `patterns` matches (cluster: a peer's
/// interest); answers once every cacher of a changed route has it.
caf::result<caf::ok_atom>
shard_add_links(topic_shard_pointer self,
                const std::vector<std::string>& patterns,
                const link_out_actor& link);

/// Takes `patterns` of a peer's interest back: `link` leaves the routes that
/// none of its other patterns match.
void shard_remove_links(topic_shard_pointer self,
                        const std::vector<std::string>& patterns,
                        const link_out_actor& link);

/// Takes `link` out of every route (its peer is gone).
void shard_drop_link(topic_shard_pointer self, const link_out_actor& link);

/// Counts the links of a new topic's seed (one entry per matching pattern)
/// into `topic` and returns them without repeats, for its first route.
std::vector<link_out_actor>
seed_links(shard_topic& topic, const std::vector<link_out_actor>& links);

/// Forgets a session that ended: out of every route and cacher list.
void shard_forget_session(topic_shard_pointer self,
                          const caf::actor_addr& addr);

/// Drops the session entry of `addr` for `topic` if it neither caches nor
/// receives, and the session entry when it uses no topic any more.
void release_use(topic_shard_pointer self, const caf::actor_addr& addr,
                 shard_topic& topic);

} // namespace tb
