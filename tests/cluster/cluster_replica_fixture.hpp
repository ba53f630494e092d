// The fixture of the replica tests (issue 32 point 5, docs/cluster.md
// "Replicas"): three nodes, groups with `replicas = 1` placed on a chosen
// owner and replica (the routers' HRW order), and the replica fields of
// GroupInfo and ClusterStats read by name through reflection, so the tests
// compile before the replica and failover branches add them (they skip
// while GroupSettings has no `replicas` field).

#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_workload.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::test {

/// The test nodes' dead_after (cluster_fixture.cpp).
constexpr auto replica_dead_after = std::chrono::milliseconds(500);

/// How long the replica tests wait for something that should happen.
constexpr auto replica_patience = std::chrono::milliseconds(10000);

/// Three nodes and replicated groups; see the file comment.
class ReplicaFixture : public ClusterFixture {
protected:
  /// Returns why replicas cannot be tested in this build ("" if they
  /// can): GroupSettings has no `replicas` field yet.
  static std::string replicas_missing();

  /// Returns the node called `name` (a test failure and the first node if
  /// there is none).
  cluster_node& node_named(const std::string& name);

  /// Creates, through the first running node, group `name` on `pattern`
  /// with `replicas` and `ack_wait_ms`.
  grpc::Status create_group(const std::string& name, const std::string& pattern,
                            uint32_t replicas, uint32_t ack_wait_ms = 30000);

  /// Creates a group on `pattern` with `replicas` (default 1) whose owner
  /// is node `owner` and whose replica (next in HRW order) is node
  /// `replica`; returns its name ("" and a test failure if it could not).
  std::string placed_group(const std::string& owner, const std::string& replica,
                           const std::string& pattern,
                           uint32_t ack_wait_ms = 30000, uint32_t replicas = 1);

  /// Returns group `name` as node `n` lists it (empty name if it does not
  /// or does not answer).
  static tinybroker::v1::GroupInfo group_info(const cluster_node& n,
                                              const std::string& name);

  /// Returns field `field` of `msg` as text ("" if it has none): strings,
  /// integers and booleans ("true"/"false").
  static std::string field_text(const google::protobuf::Message& msg,
                                const std::string& field);

  /// Returns integer field `field` of `msg` (0 if it has none).
  static uint64_t field_number(const google::protobuf::Message& msg,
                               const std::string& field);

  /// Waits until `check()` holds; false after `timeout`.
  static bool eventually(const std::function<bool()>& check,
                         std::chrono::milliseconds timeout = replica_patience);

  /// True if `info` (as the owner lists it) names a replica that is in
  /// sync (without GroupInfo.replica_synced in this build: names one).
  static bool replica_in_sync(const tinybroker::v1::GroupInfo& info);

  /// Waits until group `name`'s owner lists a replica that is in sync
  /// (GroupInfo replica_node set, replica_synced true); false after
  /// `timeout`.
  bool
  wait_replica_synced(const std::string& name,
                      std::chrono::milliseconds timeout = replica_patience);

  /// Returns the owner each running node lists for group `name`, as
  /// "n1:n2 n2:n2 n3:n2" (node:owner).
  std::string owners_listed(const std::string& name);

  /// Returns the set of owners the running nodes list for group `name`
  /// (empty strings left out).
  std::set<std::string> owner_set(const std::string& name);

  /// Waits until every running node lists `owner` as group `name`'s
  /// owner; false after `timeout`.
  bool wait_owner(const std::string& name, const std::string& owner,
                  std::chrono::milliseconds timeout = replica_patience);

  /// Holds `work`'s workers for 300 ms so that group `g` piles up messages
  /// (pending and in flight) and returns how many its owner `owner` holds:
  /// a node killed now has something to lose. `work.hold(false)` lets the
  /// workers go on.
  uint64_t pile_up(cluster_workload& work, const std::string& g,
                   const std::string& owner);

  /// Kills node `n` (SIGKILL by PID), reaps it and takes it out of
  /// `work`'s address book.
  void kill_node(cluster_node& n, cluster_workload* work);

  /// Gives `work` the address of every running node.
  void fill_book(cluster_workload& work);

  /// Returns the cluster ports of every node but `n`.
  std::vector<uint16_t> other_ports(const cluster_node& n);

  /// Prints each node's ClusterStats and the group's GroupInfo as each
  /// node lists it (on failure, for the log).
  void dump(const std::string& group);
};

} // namespace tb::test
