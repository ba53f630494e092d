// The set of existing topics, indexed so a new pattern finds its topics.
//
// When a subscription appears, the router must learn which existing topics
// it matches (to attach it to their queues) without scanning every topic.
// `topic_tree` keeps topic names in a token trie: a literal pattern token
// follows one edge, '*' visits the children of one level and '>' visits
// whole subtrees. Topics whose first token starts with '$' hang off a
// separate root that patterns starting with '*' or '>' never enter (spec 2).
//
// Not thread-safe: one owner (the router) calls everything.

#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace tb {

namespace detail {

/// A node of the `topic_tree` trie; defined in topic_tree.cpp.
struct topic_tree_node;

} // namespace detail

/// A set of literal topic names organised as a token trie.
class topic_tree {
public:
  /// Creates an empty tree.
  topic_tree();

  /// Frees all nodes.
  ~topic_tree();

  /// Moves the tree out of `other`, which stays valid but empty.
  topic_tree(topic_tree&& other);

  /// Swaps contents with `other`, which is left holding this tree's former
  /// contents (valid, and empty if this tree was).
  topic_tree& operator=(topic_tree&& other) noexcept;

  /// Not copyable: the tree owns its nodes.
  topic_tree(const topic_tree&) = delete;

  /// Not copyable: the tree owns its nodes.
  topic_tree& operator=(const topic_tree&) = delete;

  /// Adds `topic`; returns false if it was already present. Assumes
  /// `validate_topic` accepted it.
  bool insert(std::string_view topic);

  /// Removes `topic` and prunes the nodes left empty; returns false if it
  /// was not present.
  bool erase(std::string_view topic);

  /// Returns true if `topic` is present.
  bool contains(std::string_view topic) const;

  /// Calls `fn` once with the name of every stored topic that `pattern`
  /// matches, in unspecified order. Assumes `validate_pattern` accepted
  /// `pattern`; `fn` must not modify this tree.
  void for_each_match(std::string_view pattern,
                      const std::function<void(const std::string&)>& fn) const;

  /// Returns the number of stored topics.
  std::size_t size() const;

  /// Returns the number of trie nodes below the two roots, for tests and
  /// memory accounting; zero once every topic has been erased.
  std::size_t node_count() const;

private:
  using node = detail::topic_tree_node;

  // Returns the root that holds `topic`: `sys_root_` for `$` topics.
  node& root_for(std::string_view topic) const;

  // Topics not starting with '$'.
  std::unique_ptr<node> root_;
  // Topics whose first token starts with '$'.
  std::unique_ptr<node> sys_root_;
  // The number of stored topics.
  std::size_t size_ = 0;
  // The number of nodes below the roots.
  std::size_t nodes_ = 0;
};

} // namespace tb
