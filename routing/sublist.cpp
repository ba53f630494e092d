#include "routing/sublist.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "routing/pattern.hpp"
#include "routing/topic.hpp"

namespace tb {

// -- node ---------------------------------------------------------------------

/// One trie node: the pattern prefix that leads here and its next level.
struct detail::sublist_node {
  using node = sublist_node;

  /// Children reached by a literal token.
  std::unordered_map<std::string, std::unique_ptr<node>> children;
  /// Child reached by a '*' token.
  std::unique_ptr<node> star;
  /// Child reached by a '>' token; patterns end there.
  std::unique_ptr<node> gt;
  /// Keys of the patterns that end at this node, sorted and unique. Keys
  /// usually arrive in increasing order, so inserting mostly appends.
  std::vector<uint64_t> keys;

  /// Returns true if nothing is stored at or below this node.
  bool unused() const {
    return keys.empty() && children.empty() && !star && !gt;
  }
};

namespace {

using node = detail::sublist_node;
using node_ptr = std::unique_ptr<node>;

// Appends every element of `keys` to `out`.
void append(const std::vector<uint64_t>& keys, std::vector<uint64_t>& out) {
  out.insert(out.end(), keys.begin(), keys.end());
}

} // namespace

// -- matching -----------------------------------------------------------------

namespace {

// Matches the tokens in `rest` (at least one) from node `n`. `scratch` is a
// reused buffer for map lookups, so short tokens cost no allocation.
void match_from(const node* n, std::string_view rest, std::string& scratch,
                std::vector<uint64_t>& out) {
  for (;;) {
    if (n->gt)
      append(n->gt->keys, out);
    auto dot = rest.find('.');
    auto last = dot == std::string_view::npos;
    if (n->star) {
      if (last)
        append(n->star->keys, out);
      else
        match_from(n->star.get(), rest.substr(dot + 1), scratch, out);
    }
    if (n->children.empty())
      return;
    scratch.assign(rest.data(), last ? rest.size() : dot);
    auto it = n->children.find(scratch);
    if (it == n->children.end())
      return;
    n = it->second.get();
    if (last) {
      append(n->keys, out);
      return;
    }
    rest.remove_prefix(dot + 1);
  }
}

} // namespace

// Guarded by bench/sublist_bench.cpp: run it before changing match().
void sublist::match(std::string_view topic, std::vector<uint64_t>& out) const {
  if (topic.empty())
    return;
  std::string scratch{topic};
  if (auto it = literals_.find(scratch); it != literals_.end())
    append(it->second, out);
  match_from(&root_for(topic), topic, scratch, out);
}

// -- construction and lookup --------------------------------------------------

sublist::sublist()
    : root_(std::make_unique<node>()), sys_root_(std::make_unique<node>()) {
  // nop
}

sublist::~sublist() = default;

sublist::sublist(sublist&& other) : sublist() {
  *this = std::move(other);
}

sublist& sublist::operator=(sublist&& other) noexcept {
  std::swap(root_, other.root_);
  std::swap(sys_root_, other.sys_root_);
  std::swap(literals_, other.literals_);
  std::swap(size_, other.size_);
  std::swap(nodes_, other.nodes_);
  return *this;
}

std::size_t sublist::size() const {
  return size_;
}

bool sublist::empty() const {
  return size_ == 0;
}

std::size_t sublist::node_count() const {
  return nodes_;
}

std::size_t sublist::literal_count() const {
  return literals_.size();
}

sublist::node& sublist::root_for(std::string_view name) const {
  return is_system_topic(name) ? *sys_root_ : *root_;
}

// -- insert and erase ---------------------------------------------------------

namespace {

// Returns the edge of `parent` that `token` follows.
node_ptr& edge(node& parent, std::string_view token) {
  if (token == "*")
    return parent.star;
  if (token == ">")
    return parent.gt;
  return parent.children[std::string{token}];
}

// Returns the child of `parent` for `token`, or nullptr.
node* find_child(node& parent, std::string_view token) {
  if (token == "*")
    return parent.star.get();
  if (token == ">")
    return parent.gt.get();
  auto it = parent.children.find(std::string{token});
  return it == parent.children.end() ? nullptr : it->second.get();
}

// Drops the (now unused) child of `parent` for `token`.
void drop_child(node& parent, std::string_view token) {
  if (token == "*")
    parent.star.reset();
  else if (token == ">")
    parent.gt.reset();
  else
    parent.children.erase(std::string{token});
}

} // namespace

namespace {

// Adds `key` to the sorted `keys`; false if it was there.
bool add_key(std::vector<uint64_t>& keys, uint64_t key) {
  auto pos = std::lower_bound(keys.begin(), keys.end(), key);
  if (pos != keys.end() && *pos == key)
    return false;
  keys.insert(pos, key);
  return true;
}

// Removes `key` from the sorted `keys`; false if it was not there.
bool remove_key(std::vector<uint64_t>& keys, uint64_t key) {
  auto pos = std::lower_bound(keys.begin(), keys.end(), key);
  if (pos == keys.end() || *pos != key)
    return false;
  keys.erase(pos);
  if (keys.empty())
    keys.shrink_to_fit();
  return true;
}

} // namespace

void sublist::insert(std::string_view pattern, uint64_t key) {
  if (is_literal_pattern(pattern)) {
    if (add_key(literals_[std::string{pattern}], key))
      ++size_;
    return;
  }
  auto* n = &root_for(pattern);
  std::vector<std::string_view> tokens;
  split_tokens(pattern, tokens);
  for (auto token : tokens) {
    auto& next = edge(*n, token);
    if (!next) {
      next = std::make_unique<node>();
      ++nodes_;
    }
    n = next.get();
  }
  if (add_key(n->keys, key))
    ++size_;
}

bool sublist::erase(std::string_view pattern, uint64_t key) {
  if (is_literal_pattern(pattern)) {
    auto it = literals_.find(std::string{pattern});
    if (it == literals_.end() || !remove_key(it->second, key))
      return false;
    if (it->second.empty())
      literals_.erase(it);
    --size_;
    return true;
  }
  std::vector<std::string_view> tokens;
  split_tokens(pattern, tokens);
  // path[i] is the parent of the node reached by tokens[i].
  std::vector<node*> path;
  path.reserve(tokens.size());
  auto* n = &root_for(pattern);
  for (auto token : tokens) {
    path.push_back(n);
    n = find_child(*n, token);
    if (n == nullptr)
      return false;
  }
  if (!remove_key(n->keys, key))
    return false;
  --size_;
  // Prune from the bottom while the node holds nothing.
  for (auto i = tokens.size(); i > 0 && n->unused(); --i) {
    auto* parent = path[i - 1];
    drop_child(*parent, tokens[i - 1]);
    --nodes_;
    n = parent;
  }
  return true;
}

} // namespace tb
