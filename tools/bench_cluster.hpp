// tinybroker-bench across a cluster's nodes (issue 30, docs/cluster.md
// "Figures"): --subscribe-server may name several nodes, A,B,C; the
// subscribers of a fan-out run are then spread over them round robin, so
// that one run checks that a publisher's messages reach every node's
// subscribers in order and once (sequence numbers in the payload).

#pragma once

#include <memory>
#include <string>
#include <vector>

#include "client/security.hpp"
#include "tools/bench_config.hpp"

namespace tb::bench {

/// If cfg.subscribe_server names several addresses (comma-separated),
/// connects to each (waiting up to 5 s for each) and sets
/// cfg.subscribe_conns to them, in the order given; the connections go to
/// `conns`. Returns the problem, naming the address, or "" (also when
/// cfg.subscribe_server names one address or none: nothing to do).
std::string
open_subscribe_nodes(run_config& cfg, const client::security_options& security,
                     std::vector<std::unique_ptr<client::connection>>& conns);

/// A problem opening a connection: its gRPC status name and text.
struct connect_problem {
  /// "INVALID_ARGUMENT" or "UNAVAILABLE"; empty if none.
  const char* code = "";
  /// What went wrong, naming the flag and the address; empty if none.
  std::string text;
};

/// Connects to cfg.publish_server and cfg.subscribe_server when they name
/// another broker than cfg.server (waiting up to 5 s for each) and points
/// cfg.publish_conn and cfg.subscribe_conn at them; the connections go to
/// `conns` (publish, subscribe). Returns the problem, or an empty one.
connect_problem
open_role_servers(run_config& cfg, const client::security_options& security,
                  std::unique_ptr<client::connection> (&conns)[2]);

} // namespace tb::bench
