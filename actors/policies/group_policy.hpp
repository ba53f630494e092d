// The extension point of consumer groups (spec 8): a policy decides which
// member gets each message. Everything else a group does (the FIFO, credit,
// acks, deadlines, redelivery, dead letters, bounds) is the group actor's
// and the same for every policy.
//
// A group actor runs exactly one policy object, in its own thread of
// control: the policy is the group actor's delivery logic, called inline
// for each message it hands out (no actor hop, no locking). Write one class
// deriving from `group_policy`, register it by name with
// `register_policy<T>("name")` (actors/policies/policy_registry.hpp) and name
// it in a group's `policy` setting. docs/extending.md walks through an example.

#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/message.hpp"
#include "actors/protocol.hpp"

namespace tb {

/// Times in a row a member's deliveries expire, with no answer from its
/// session in between, that mark it stalled (deliveries that expire
/// together count once; docs/semantics.md).
constexpr uint32_t stall_after = 3;

/// One member of a group: a subscription of a session.
struct group_member {
  /// The member's session.
  session_actor session;
  /// The subscription id within that session.
  uint64_t subscription_id = 0;
  /// The most unacked deliveries it holds at once.
  uint32_t max_in_flight = 256;
  /// Its unacked deliveries.
  uint32_t in_flight = 0;
  /// False once it left: no new deliveries, but it may still answer.
  bool active = true;
  /// The tags it joined with (`Subscribe.tags`), for policies to read.
  std::vector<std::string> tags;
  /// Its session's peer address, for the Stats view.
  std::string peer;
  /// The name its client chose (empty if none), for the Stats view.
  std::string client_name;
  /// The name of its session's token (empty with auth off), for the Stats
  /// view.
  std::string token;
  /// Its acks, nacks and rejects, for the Stats view.
  uint64_t acks = 0;
  /// Its nacks.
  uint64_t nacks = 0;
  /// Its rejects.
  uint64_t rejects = 0;
  /// Its deliveries that passed ack_wait unanswered.
  uint64_t expired = 0;
  /// Times its deliveries expired since its session last answered anything;
  /// deliveries that expire together (at one deadline) count once.
  uint32_t timeouts_in_row = 0;
  /// True while it is stalled: its deliveries expired `stall_after` times in
  /// a row. It gets no new deliveries until its session answers something.
  bool stalled = false;
  /// Set by the group for the duration of one `pick` on a member the message
  /// went to before, so that a redelivery prefers another member.
  bool excluded = false;

  /// Returns true if the member may get new deliveries: it is active and
  /// not stalled.
  bool may_receive() const noexcept {
    return active && !stalled;
  }

  /// Returns true if the member may get this delivery and has free credit.
  /// The group decides who may receive (active, not stalled, not passed
  /// over for this message); policies only choose among them.
  bool has_credit() const noexcept {
    return may_receive() && !excluded && in_flight < max_in_flight;
  }

  /// Returns true if the member joined with `tag`.
  bool has_tag(const std::string& tag) const;
};

/// The members of a group by key, and their join order. Keys are unique
/// within the group and never reused; 0 is never a key.
class member_directory {
public:
  /// The map type behind the directory.
  using map_type = std::unordered_map<uint64_t, group_member>;

  /// Returns the member with `key`, or null.
  const group_member* find(uint64_t key) const;

  /// Returns the member with `key`, or null.
  group_member* find(uint64_t key);

  /// Returns the member with `key`, which must exist.
  group_member& at(uint64_t key) {
    return members_.at(key);
  }

  /// Returns the member with `key`, which must exist.
  const group_member& at(uint64_t key) const {
    return members_.at(key);
  }

  /// Returns every member's key (active or not) in join order.
  const std::vector<uint64_t>& join_order() const noexcept {
    return order_;
  }

  /// Returns how many more deliveries the active members take in total.
  uint64_t free_credit() const;

  /// Returns how many members take deliveries.
  std::size_t active_count() const;

  /// Adds `member` and returns its new key.
  uint64_t add(group_member member);

  /// Removes the member with `key`.
  void erase(uint64_t key);

  /// Iterates members as (key, member) pairs, in no particular order.
  map_type::iterator begin() {
    return members_.begin();
  }

  /// The end of the iteration.
  map_type::iterator end() {
    return members_.end();
  }

  /// Iterates members as (key, member) pairs, in no particular order.
  map_type::const_iterator begin() const {
    return members_.begin();
  }

  /// The end of the iteration.
  map_type::const_iterator end() const {
    return members_.end();
  }

private:
  map_type members_;
  std::vector<uint64_t> order_;
  uint64_t next_key_ = 1;
};

/// Decides which member gets each message of a group. The group actor calls
/// `joined` and `left` as members start and stop taking deliveries, and
/// `pick` for each message it hands out, oldest first, while some member
/// has credit.
class group_policy {
public:
  virtual ~group_policy();

  /// The member with `key` started taking deliveries: it joined, joined
  /// again after it left, or answered again after it stalled.
  virtual void joined(uint64_t key, const group_member& member);

  /// The member with `key` stopped taking deliveries: it left, its session
  /// ended (its deliveries in flight are already requeued), or it stalled
  /// (`joined` follows once it answers again).
  virtual void left(uint64_t key);

  /// Returns the key of the member that gets `msg`: an active member with
  /// credit. Returning 0, or a member without credit, holds `msg` back for
  /// this round; later messages may still go out, and `msg` keeps its place
  /// at the head of the queue.
  virtual uint64_t pick(const message_record& msg,
                        const member_directory& members) = 0;
};

} // namespace tb
