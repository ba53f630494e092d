// The subscription index: which subscriptions match a published topic.
//
// A trie of pattern tokens in the style of nats-server's `sublist.go`. Each
// node holds its literal children in a hash map and its '*' and '>' children
// on two separate edges, so matching a topic follows at most three edges per
// token and never scans siblings. Patterns whose first token is a literal
// `$...` hang off a separate root (as in mosquitto), and a `$` topic is only
// matched from that root: root wildcards can never reach it (spec 2).
//
// Literal patterns (no '*' or '>') skip the trie: they live in one hash map
// from the pattern to its keys, so subscribing to a literal costs one map
// insert instead of a node per token, and a topic's match looks its own name
// up there before walking the trie for the wildcards (nats-server keeps a
// cache of literal results for the same reason).
//
// Not thread-safe: one owner (the router) calls everything.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tb {

namespace detail {

/// A node of the `sublist` trie; defined in sublist.cpp.
struct sublist_node;

} // namespace detail

/// A pattern trie mapping subscription patterns to subscription keys.
class sublist {
public:
  /// Creates an empty sublist.
  sublist();

  /// Frees all nodes.
  ~sublist();

  /// Moves the trie out of `other`, which stays valid but empty.
  sublist(sublist&& other);

  /// Swaps contents with `other`, which is left holding this trie's former
  /// contents (valid, and empty if this trie was).
  sublist& operator=(sublist&& other) noexcept;

  /// Not copyable: the trie owns its nodes.
  sublist(const sublist&) = delete;

  /// Not copyable: the trie owns its nodes.
  sublist& operator=(const sublist&) = delete;

  /// Stores `key` under `pattern`; adding a (pattern, key) pair that is
  /// already stored does nothing. Assumes `validate_pattern` accepted it.
  void insert(std::string_view pattern, uint64_t key);

  /// Removes `key` from `pattern` and prunes the nodes left empty; returns
  /// false if the pair was not stored.
  bool erase(std::string_view pattern, uint64_t key);

  /// Appends to `out` the key of every stored pair whose pattern matches
  /// `topic`; a key appears once per matching pattern it is stored under.
  /// Assumes `validate_topic` accepted `topic`.
  // Guarded by bench/sublist_bench.cpp: run it before changing match().
  void match(std::string_view topic, std::vector<uint64_t>& out) const;

  /// Returns the number of stored (pattern, key) pairs.
  std::size_t size() const;

  /// Returns true if no pair is stored.
  bool empty() const;

  /// Returns the number of trie nodes below the two roots, for tests and
  /// memory accounting; zero once every pair has been erased. Literal
  /// patterns take none.
  std::size_t node_count() const;

  /// Returns the number of distinct literal patterns stored.
  std::size_t literal_count() const;

private:
  using node = detail::sublist_node;

  // Returns the root that holds `name`: `sys_root_` for `$` names.
  node& root_for(std::string_view name) const;

  // Patterns not starting with '$' (including all root wildcards).
  std::unique_ptr<node> root_;
  // Patterns whose first token is a literal starting with '$'.
  std::unique_ptr<node> sys_root_;
  // Literal patterns and their keys, sorted and unique.
  std::unordered_map<std::string, std::vector<uint64_t>> literals_;
  // The number of stored (pattern, key) pairs.
  std::size_t size_ = 0;
  // The number of nodes below the roots.
  std::size_t nodes_ = 0;
};

} // namespace tb
