// What a node's cluster actor knows of its peers, as plain values: which
// configured addresses it dials and when, which greetings it accepts, and
// when the node is ready. No actor, no socket: the cluster actor
// (cluster_actor.hpp) turns network events into calls here, and
// tests/actors/cluster_book_test.cpp drives the rules directly.
//
// A peer's life, as `state` names it:
//
//   connecting --greeted--> syncing --router answered--> synced
//        ^                                                  |
//        +---- redial (smaller name) <---- down <-----------+
//
// A greeting is refused (state "refused" for the address that sent it)
// for another version, this node's own name or node id, or a name that a
// live peer already has.

#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "actors/cluster_types.hpp"

namespace tb {

/// The first pause before redialing an address; it doubles per failure.
inline constexpr std::chrono::milliseconds cluster_first_backoff{100};

/// The longest pause before redialing an address.
inline constexpr std::chrono::milliseconds cluster_max_backoff{2000};

/// Where a peer stands, as Stats names it.
enum class peer_state { connecting, syncing, synced, down, refused };

/// Returns the name Stats gives `x`: "connecting", "syncing", "synced",
/// "down" or "refused".
const char* to_string(peer_state x) noexcept;

/// An address this node dials: a configured peer, or one a peer announced.
struct cluster_slot {
  /// The peer's cluster address, `HOST:PORT`.
  std::string address;
  /// Whether `[cluster] peers` lists it (only those count for readiness).
  bool configured = false;
  /// The name of the node last met at this address; empty if none yet.
  std::string name;
  /// The pause before the next dial after a failure.
  std::chrono::milliseconds next_delay = cluster_first_backoff;
  /// Failed dial attempts since the last success.
  uint64_t failed_dials = 0;
  /// Whether a dial is under way or scheduled.
  bool dialing = false;
  /// Whether its first attempt ended (met, failed or refused): what the
  /// readiness waits for.
  bool resolved = false;
  /// Whether the node there refused this node's greeting last time.
  bool refused = false;
  /// Why the last attempt failed; empty after a success.
  std::string last_error;
  /// Since when (Unix ms) the slot is in its current state.
  uint64_t since_unix_ms = 0;
};

/// A node this node met.
struct cluster_peer {
  /// Its greeting, without handles.
  std::string name;
  /// Its announced cluster address.
  std::string address;
  /// Its CAF node id.
  std::string node_id;
  /// Its start time, Unix ms.
  uint64_t epoch = 0;
  /// Where it stands.
  peer_state state = peer_state::connecting;
  /// Since when (Unix ms).
  uint64_t since_unix_ms = 0;
  /// How often it came back after being down.
  uint64_t reconnects = 0;
  /// Why its sync failed, if it did.
  std::string last_error;
};

/// What to do with a greeting.
struct hello_verdict {
  /// What the greeting is.
  enum kind_t {
    /// A node not met before: accept, watch it, sync with it.
    fresh,
    /// The node already met, greeting again (both sides dialed): answer.
    same,
    /// A node met before that restarted or reconnected: replace it.
    rejoin,
    /// Refuse it; `reason` says why.
    refuse,
  } kind = fresh;
  /// Why a greeting is refused, for both sides' logs.
  std::string reason;
};

/// A node's book of peers; see the file comment.
class cluster_book {
public:
  /// Starts a book for node `name` (CAF node id `node_id`, protocol
  /// `version`) that dials `configured` addresses.
  cluster_book(std::string name, std::string node_id, std::string version,
               const std::vector<std::string>& configured, uint64_t now_ms);

  /// Judges the greeting `hello`.
  hello_verdict judge(const cluster_hello& hello) const;

  /// Records that the node of `hello` is connected and syncing (after a
  /// verdict `fresh` or `rejoin`); returns its entry.
  cluster_peer& record_up(const cluster_hello& hello, uint64_t now_ms);

  /// Records that the router synced with peer `name` (of epoch `epoch`);
  /// `error` non-empty: the sync failed, which counts as done too.
  void record_synced(const std::string& name, uint64_t epoch, uint64_t now_ms,
                     const std::string& error = {});

  /// Records that peer `name` is gone; returns the addresses to redial
  /// (none unless this node's name is the smaller one).
  std::vector<std::string> record_down(const std::string& name,
                                       uint64_t now_ms);

  /// Returns the slot of `address`, adding an unconfigured one if new.
  cluster_slot& slot(const std::string& address);

  /// Returns whether `address` should be dialed now: no dial is under way,
  /// and the node there is not live, nor one that redials this node.
  bool should_dial(const std::string& address) const;

  /// Records a failed dial of `address` (`error` says why; `refused`: the
  /// node there refused the greeting); returns the pause before the next
  /// attempt (100 ms doubling to 2 s).
  std::chrono::milliseconds record_dial_failed(const std::string& address,
                                               const std::string& error,
                                               uint64_t now_ms,
                                               bool refused = false);

  /// Records that node `name` answered at `address`.
  void record_met(const std::string& address, const std::string& name,
                  uint64_t now_ms);

  /// Records that the start's `dead_after` passed: configured peers that
  /// did not answer by then no longer hold the readiness back.
  void record_deadline() noexcept {
    deadline_passed_ = true;
  }

  /// Returns true once every configured peer is synced, failed its first
  /// dial, or did not answer before the deadline, and no greeted peer's
  /// first sync is under way.
  bool ready() const;

  /// Returns the peer called `name`, if met.
  const cluster_peer* find(const std::string& name) const;

  /// Describes every slot and peer for Stats.
  std::vector<cluster_peer_view> view() const;

  /// Returns this node's name.
  const std::string& name() const noexcept {
    return name_;
  }

private:
  std::string name_;
  std::string node_id_;
  std::string version_;
  std::map<std::string, cluster_slot> slots_;
  std::map<std::string, cluster_peer> peers_;
  bool deadline_passed_ = false;
};

} // namespace tb
