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

} // namespace tb::bench
