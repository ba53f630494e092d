// Reads the [cluster] table (issue 30; docs/cluster.md):
//
//   [cluster]
//   name = "n1"                         # required; unique in the cluster
//   listen = "127.0.0.1:7410"           # required; where peers dial this node
//   peers = ["127.0.0.1:7420", "127.0.0.1:7430"]
//   heartbeat = "200ms"                 # CAF middleman.heartbeat-interval
//   dead_after = "1s"                   # CAF middleman.connection-timeout
//   link_window_batches = 16            # the links' window (interest's)
//   link_buffer_bytes = "64MiB"         # the links' buffer per peer
//   tls = false                         # TLS between nodes with [tls]'s files
//   replicas = 0                        # groups' default replicas (0 or 1)
//   quorum = "majority"                 # or "none": the majority rule
//
// Without the table the broker is a single node, as it always was.

#include <set>

#include "config/toml_reader.hpp"

namespace tb::detail {

namespace {

// What a cluster address may be, for messages.
constexpr const char* cluster_address_expected =
    "HOST:PORT with a port from 1 to 65535, like \"127.0.0.1:7410\"";

// Returns true if `text` is a listen address with a port other than 0: a
// node must be found at a fixed port.
bool is_cluster_address(std::string_view text) {
  return check_listen_address(text).empty() &&
         text.substr(text.rfind(':') + 1).find_first_not_of('0') !=
             std::string_view::npos;
}

} // namespace

void read_cluster(reader& r, const toml::value& v, const std::string& path,
                  cluster_config& out) {
  auto peers = [&r, &out](const toml::value& v, const std::string& path) {
    if (!v.is_array())
      return r.bad(v, path,
                   "an array of HOST:PORT strings like [\"10.0.0.2:7410\"]");
    std::set<std::string> seen;
    for (auto& item : v.as_array()) {
      if (!item.is_string() || !is_cluster_address(item.as_string().str))
        return r.bad(item, path, cluster_address_expected);
      auto& text = item.as_string().str;
      if (!seen.insert(text).second)
        return r.bad(item, path, "each address once",
                     "\"" + text + "\" is listed twice");
      out.peers.push_back(text);
    }
  };
  auto quorum = [&r, &out](const toml::value& v, const std::string& path) {
    const char* expected =
        "\"majority\" (group operations need a majority of the configured "
        "nodes) or \"none\" (no rule, e.g. for 2 nodes)";
    if (!v.is_string())
      return r.bad(v, path, expected);
    auto& text = v.as_string().str;
    if (text == "majority")
      out.quorum = quorum_rule::majority;
    else if (text == "none")
      out.quorum = quorum_rule::none;
    else
      r.bad(v, path, expected);
  };
  r.read_table(
      v, path,
      {{"name", r.text(out.node_name,
                       "a node name: 1 to 128 of A-Z a-z 0-9 _ -", is_name)},
       {"listen",
        r.text(out.listen, cluster_address_expected, is_cluster_address)},
       {"peers", peers},
       {"heartbeat", r.duration(out.heartbeat, 1)},
       {"dead_after", r.duration(out.dead_after, 1)},
       {"link_window_batches", r.count(out.link_window_batches, 1, 65536)},
       {"link_buffer_bytes", r.size(out.link_buffer_bytes)},
       {"tls", r.boolean(out.tls)},
       {"replicas", r.count(out.replicas, 0, 1)},
       {"quorum", quorum}},
      nullptr);
  if (!v.is_table())
    return;
  auto& tbl = v.as_table();
  if (tbl.count("name") == 0)
    r.bad(v, path, "a key like name = \"n1\" (this node's name)",
          "[cluster] needs a name");
  if (tbl.count("listen") == 0)
    r.bad(v, path,
          "a key like listen = \"127.0.0.1:7410\" (where the other nodes "
          "dial this one)",
          "[cluster] needs a listen address");
  if (tbl.count("listen") != 0 && tbl.count("peers") != 0)
    for (auto& p : out.peers)
      if (p == out.listen)
        r.bad(tbl.at("peers"), path + ".peers",
              "the other nodes' addresses only",
              "it lists this node's own listen address " + p);
  if (out.dead_after < 2 * out.heartbeat && tbl.count("dead_after") != 0)
    r.bad(tbl.at("dead_after"), path + ".dead_after",
          "at least two heartbeats (" +
              std::to_string(2 * out.heartbeat.count()) + "ms)",
          "shorter than two heartbeats: a live peer would be declared "
          "dead");
  else if (out.dead_after < 2 * out.heartbeat)
    r.bad(tbl.at("heartbeat"), path + ".heartbeat",
          "at most half of dead_after (" +
              std::to_string(out.dead_after.count() / 2) + "ms)",
          "longer than half of dead_after: a live peer would be declared "
          "dead");
}

void check_cluster(reader& r, const toml::value& root,
                   const broker_config& cfg) {
  if (!cfg.cluster.tls || !root.is_table() ||
      root.as_table().count("cluster") == 0)
    return;
  auto& cluster = root.as_table().at("cluster");
  if (!cluster.is_table() || cluster.as_table().count("tls") == 0)
    return;
  if (!cfg.tls.enabled() || !cfg.tls.mutual())
    r.bad(cluster.as_table().at("tls"), "cluster.tls",
          "a [tls] table with cert, key and client_ca (the CA that signs "
          "every node's certificate)",
          "true without [tls] client_ca");
}

} // namespace tb::detail
