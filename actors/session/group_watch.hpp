// What a session waits for from groups that live on another node (cluster,
// issue 30 points 3-4).
//
// CAF 0.17 never completes a request to a remote actor whose node dies, so a
// session does not trust the reply alone: it monitors each remote group
// handle it waits on (once per handle, not per message) and keeps a book of
// what still waits on it. When the handle's down message says its node is
// gone (`remote_link_unreachable`), everything waiting is answered at once
// with node_unavailable; the late reply, or the request's timeout, then finds
// nothing left to answer and is ignored. Local groups are not watched: they
// always answer (a deleted one through CAF's bounce).

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/duration.hpp>

#include "actors/protocol.hpp"
#include "routing/error.hpp"

namespace tb {

/// The remote group handles a session monitors and what waits on each.
class group_watch {
public:
  /// Answers one waiting operation with the error that ends it.
  using fail_fn = std::function<void(const error_info&)>;

  /// How long a request to a remote group may wait for its reply before it
  /// is answered as unavailable (its node's down message usually comes
  /// first: within `cluster.dead_after`).
  static constexpr std::chrono::seconds reply_timeout{5};

  /// Demonitors every handle still watched (a remote group's proxy would
  /// otherwise keep one monitor per ended session).
  ~group_watch();

  group_watch() = default;
  group_watch(const group_watch&) = delete;
  group_watch& operator=(const group_watch&) = delete;

  /// Tests only: treat local group handles as remote (a test coordinator has
  /// one node; a test simulates a lost node by killing a local group with
  /// `remote_link_unreachable`).
  bool local_as_remote = false;

  /// Returns true if `group` needs watching: it lives on another node than
  /// `self_node` (or `local_as_remote` is set).
  bool is_remote(const caf::actor_addr& group,
                 const caf::node_id& self_node) const;

  /// Starts watching `group` for the observer `self`; returns true if this
  /// is the first time (the caller monitors it then).
  bool add(const caf::actor_addr& group, const caf::actor_addr& self);

  /// Remembers the name of `group` (for the errors that name it).
  void set_name(const caf::actor_addr& group, const std::string& name);

  /// Returns true the first time it is called for `group` (watched): the
  /// caller asks the group its name then.
  bool ask_name(const caf::actor_addr& group);

  /// Returns the name of `group`, or empty if unknown.
  std::string name_of(const caf::actor_addr& group) const;

  /// Records an operation waiting on `group` (watched); returns its token.
  uint64_t wait(const caf::actor_addr& group, fail_fn fail);

  /// Ends the wait `token` on `group`: true if it still waited (the caller
  /// answers it now), false if it was answered already (at the down).
  bool finish(const caf::actor_addr& group, uint64_t token);

  /// Handles the down message of `group`: for a lost node, returns every
  /// waiting operation's fail function in the order they began (removed
  /// from the book: publish confirms keep their order) and forgets
  /// the handle; for another reason (a deleted group), only stops watching:
  /// its waits end through their own replies.
  std::vector<fail_fn> down(const caf::actor_addr& group, bool node_lost);

  /// Returns the number of handles watched (for tests and stats).
  size_t watched() const noexcept {
    return entries_.size();
  }

  /// Returns the number of operations waiting on any handle.
  size_t waiting() const noexcept;

private:
  struct entry {
    std::string name;
    std::map<uint64_t, fail_fn> waiters; // in the order they began
    bool monitored = false;
    bool asked = false;
  };

  std::unordered_map<caf::actor_addr, entry> entries_;
  caf::actor_addr observer_;
  uint64_t next_token_ = 1;
};

/// Returns the error every operation waiting on a group whose owner node is
/// gone gets: node_unavailable, naming the group (or "a group" if unknown).
error_info group_node_lost_error(const std::string& group_name);

/// Returns the error of a request to a remote group that got no reply within
/// `group_watch::reply_timeout`.
error_info group_no_reply_error(const std::string& group_name);

/// Returns the error of a batch a group bounced: it ended before it took
/// the batch (deleted, its node stopping, or dropped for a newer owner).
error_info group_ended_error(const std::string& group_name);

} // namespace tb
