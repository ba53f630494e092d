// The broker's side of a cluster (issue 30, docs/cluster.md): the CAF
// network layer it loads for `[cluster]`, the cluster actor it publishes,
// the wait for the first sync before serving, and the cluster section of
// Stats. A broker without `[cluster]` calls none of this.

#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "actors/broker_context.hpp"
#include "actors/cluster/cluster_quorum.hpp"
#include "actors/protocol.hpp"
#include "config/broker_config.hpp"
#include "net/stats_collector.hpp"
#include "routing/error.hpp"

namespace caf {
class actor_system;
class actor_system_config;
} // namespace caf

namespace tinybroker::v1 {
class ClusterStats;
} // namespace tinybroker::v1

namespace tb {

/// Returns the app identifier this node sends in CAF's handshake:
/// `cluster_app_identifier`, or the test-only override of the environment
/// variable `cluster_app_identifier_env`.
std::string cluster_version();

/// Prepares `sys_cfg` for the cluster of `cfg`: loads CAF's middleman (and
/// libcaf_openssl with `[cluster] tls`), sets the app identifier, the
/// heartbeat and the connection timeout, and the TLS files of `[tls]`.
void configure_cluster(caf::actor_system_config& sys_cfg,
                       const broker_config& cfg);

/// Spawns the cluster actor of `cfg` for `router` and publishes it on the
/// cluster listen address; sets `out`. An error names the address that
/// could not be bound. The cluster actor publishes the majority rule's count
/// in `quorum`, which the sessions read, and reports the re-joins the
/// sessions count in `rejoins`.
error_info start_cluster(caf::actor_system& sys, const broker_config& cfg,
                         const router_actor& router, cluster_actor& out,
                         std::shared_ptr<quorum_state> quorum,
                         std::shared_ptr<rejoin_counters> rejoins);

/// Waits at most `patience` for `cluster` to report ready; false if it did
/// not in time.
bool wait_cluster_ready(caf::actor_system& sys, const cluster_actor& cluster,
                        std::chrono::milliseconds patience);

/// Returns `done` preceded by questions to `cluster` and `router`: the
/// reply it gets carries the cluster section with each peer's traffic (a
/// node that does not answer within a second leaves the section with its
/// name only; a router that does not, the traffic at zero).
stats_callback with_cluster_stats(caf::actor_system& sys,
                                  const cluster_actor& cluster,
                                  const router_actor& router,
                                  stats_callback done);

/// Copies `view` into the Stats message `out`.
void fill_cluster_stats(const cluster_view& view,
                        tinybroker::v1::ClusterStats& out);

/// Copies the router's group directory counters into `out` (fields 6-9 of
/// ClusterStats: groups owned, remote, lost with their owner, conflicts).
void fill_directory_stats(const directory_stats& stats,
                          tinybroker::v1::ClusterStats& out);

/// Copies the router's counters of each peer in `peers` into the peer of
/// `out` with the same name (fields 10-19 of ClusterPeer); peers the
/// router does not know keep zeros.
void fill_peer_traffic(const peer_stats_list& peers,
                       tinybroker::v1::ClusterStats& out);

} // namespace tb
