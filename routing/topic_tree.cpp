#include "routing/topic_tree.hpp"

#include <unordered_map>
#include <vector>

#include "routing/topic.hpp"

namespace tb {

// -- node ---------------------------------------------------------------------

/// One trie node: a topic prefix and the tokens that may follow it.
struct detail::topic_tree_node {
  /// Children by their next token.
  std::unordered_map<std::string, std::unique_ptr<topic_tree_node>> children;
  /// The full topic name if a topic ends here, else empty (topics never are).
  std::string topic;

  /// Returns true if a topic ends at this node.
  bool terminal() const {
    return !topic.empty();
  }

  /// Returns true if nothing is stored at or below this node.
  bool unused() const {
    return children.empty() && !terminal();
  }
};

namespace {

using node = detail::topic_tree_node;
using callback = std::function<void(const std::string&)>;

// Calls `fn` for every topic strictly below `n`.
void visit_all(const node& n, const callback& fn) {
  for (const auto& [token, child] : n.children) {
    if (child->terminal())
      fn(child->topic);
    visit_all(*child, fn);
  }
}

// Matches the pattern tokens in `rest` (at least one) from node `n`.
// `scratch` is a reused buffer for map lookups.
void visit_matches(const node& n, std::string_view rest, std::string& scratch,
                   const callback& fn) {
  auto dot = rest.find('.');
  auto last = dot == std::string_view::npos;
  auto token = rest.substr(0, dot);
  auto tail = last ? std::string_view{} : rest.substr(dot + 1);
  // Visits `child`, which `token` matched.
  auto descend = [&](const node& child) {
    if (!last)
      visit_matches(child, tail, scratch, fn);
    else if (child.terminal())
      fn(child.topic);
  };
  if (token == ">") {
    visit_all(n, fn);
  } else if (token == "*") {
    for (const auto& [tok, child] : n.children)
      descend(*child);
  } else {
    scratch.assign(token.data(), token.size());
    auto it = n.children.find(scratch);
    if (it != n.children.end())
      descend(*it->second);
  }
}

} // namespace

void topic_tree::for_each_match(std::string_view pattern,
                                const callback& fn) const {
  if (pattern.empty())
    return;
  // A pattern starting with '*' or '>' does not start with '$', so it only
  // ever enters `root_` and never sees a '$' topic.
  std::string scratch;
  visit_matches(root_for(pattern), pattern, scratch, fn);
}

// -- construction and lookup --------------------------------------------------

topic_tree::topic_tree()
    : root_(std::make_unique<node>()), sys_root_(std::make_unique<node>()) {
  // nop
}

topic_tree::~topic_tree() = default;

topic_tree::topic_tree(topic_tree&& other) : topic_tree() {
  *this = std::move(other);
}

topic_tree& topic_tree::operator=(topic_tree&& other) noexcept {
  std::swap(root_, other.root_);
  std::swap(sys_root_, other.sys_root_);
  std::swap(size_, other.size_);
  std::swap(nodes_, other.nodes_);
  return *this;
}

std::size_t topic_tree::size() const {
  return size_;
}

std::size_t topic_tree::node_count() const {
  return nodes_;
}

topic_tree::node& topic_tree::root_for(std::string_view topic) const {
  return is_system_topic(topic) ? *sys_root_ : *root_;
}

bool topic_tree::contains(std::string_view topic) const {
  const node* n = &root_for(topic);
  std::vector<std::string_view> tokens;
  split_tokens(topic, tokens);
  for (auto token : tokens) {
    auto it = n->children.find(std::string{token});
    if (it == n->children.end())
      return false;
    n = it->second.get();
  }
  return n->terminal();
}

// -- insert and erase ---------------------------------------------------------

bool topic_tree::insert(std::string_view topic) {
  auto* n = &root_for(topic);
  std::vector<std::string_view> tokens;
  split_tokens(topic, tokens);
  for (auto token : tokens) {
    auto& next = n->children[std::string{token}];
    if (!next) {
      next = std::make_unique<node>();
      ++nodes_;
    }
    n = next.get();
  }
  if (n->terminal())
    return false;
  n->topic.assign(topic.data(), topic.size());
  ++size_;
  return true;
}

bool topic_tree::erase(std::string_view topic) {
  std::vector<std::string_view> tokens;
  split_tokens(topic, tokens);
  // path[i] is the parent of the node reached by tokens[i].
  std::vector<node*> path;
  path.reserve(tokens.size());
  auto* n = &root_for(topic);
  for (auto token : tokens) {
    path.push_back(n);
    auto it = n->children.find(std::string{token});
    if (it == n->children.end())
      return false;
    n = it->second.get();
  }
  if (!n->terminal())
    return false;
  std::string{}.swap(n->topic); // release the name's memory
  --size_;
  for (auto i = tokens.size(); i > 0 && n->unused(); --i) {
    auto* parent = path[i - 1];
    parent->children.erase(std::string{tokens[i - 1]});
    --nodes_;
    n = parent;
  }
  return true;
}

} // namespace tb
