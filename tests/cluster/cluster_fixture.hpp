// The fixture of the cluster tests (issue 30 point 6, docs/cluster.md):
// broker processes on free loopback ports, each a node of one cluster
// whose peers are the others, stopped by PID; Stats tells when each node
// synced with its peers.

#pragma once

#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/connection.hpp"
#include "tests/e2e/broker_process.hpp"
#include "tinybroker.pb.h"

namespace tb::test {

/// One node of a test cluster.
struct cluster_node {
  /// Its name ([cluster] name).
  std::string name;
  /// Its cluster port on 127.0.0.1.
  uint16_t port = 0;
  /// Its config file.
  std::string config;
  /// More command-line arguments of the broker (e.g. a metrics listener).
  std::vector<std::string> args;
  /// The running process; null while stopped.
  std::unique_ptr<broker_process> process;
};

/// Starts and stops the nodes of one cluster; see the file comment.
class ClusterFixture : public ::testing::Test {
protected:
  /// Stops every node still running (SIGKILL).
  void TearDown() override;

  /// Adds node `name` on a free port; `start()` runs it. Every node's
  /// peers are all other nodes added (so add them all first).
  cluster_node& add_node(const std::string& name);

  /// Adds a peer `name` at the port of `address` ("127.0.0.1:PORT"), a
  /// process that is no node (say, a broker's gRPC port), to the peers of
  /// the nodes started after.
  void add_wrong_peer(const std::string& name, const std::string& address);

  /// Writes node `n`'s config (with `extra` TOML lines inside [cluster]
  /// and `tail` after it) and starts it; false if it did not report
  /// ready within `timeout`.
  bool start(cluster_node& n, const std::string& extra = {},
             const std::string& tail = {},
             std::chrono::milliseconds timeout = std::chrono::seconds(20));

  /// Adds nodes n1, n2 and n3, starts them and waits until each synced with
  /// both others.
  void start_three();

  /// Returns a client connection to node `n`'s gRPC address, connected (a
  /// test failure if it does not connect within 5 s).
  static std::unique_ptr<client::connection> connect(const cluster_node& n);

  /// Returns node `n`'s whole Stats reply (empty on failure).
  tinybroker::v1::StatsReply full_stats(const cluster_node& n);

  /// Returns node `n`'s cluster section of Stats (empty on failure).
  tinybroker::v1::ClusterStats stats(const cluster_node& n) {
    return full_stats(n).cluster();
  }

  /// Returns the state node `n` gives the peer called or at `key`, or ""
  /// if it does not list it.
  std::string state_of(const cluster_node& n, const std::string& key);

  /// Waits until node `n` lists `key` in `state`; false after `timeout`.
  bool wait_state(const cluster_node& n, const std::string& key,
                  const std::string& state, std::chrono::milliseconds timeout);

  /// Waits until node `n` has `count` synced peers; false after `timeout`.
  bool wait_synced(const cluster_node& n, size_t count,
                   std::chrono::milliseconds timeout);

  /// Returns node `n`'s /metrics page, read from the metrics address its
  /// log names (the node must run a metrics listener); fails the test and
  /// returns "" if there is none or the page does not answer.
  std::string metrics_of(const cluster_node& n);

  /// Sends `signal` to node `n`'s process (by PID); after SIGSTOP, waits
  /// until every thread of it stopped (the test fails after 2 s).
  void signal(cluster_node& n, int signal);

  /// Stops node `n` with SIGTERM (SIGKILL after `timeout`) and starts it
  /// again on the same config and cluster port, as a rolling restart does;
  /// false if it did not report ready within 20 s.
  bool restart(cluster_node& n,
               std::chrono::milliseconds timeout = std::chrono::seconds(15));

  /// Returns node `n`'s address "127.0.0.1:PORT" on the cluster.
  static std::string cluster_address(const cluster_node& n);

  /// The nodes, in the order added.
  std::vector<std::unique_ptr<cluster_node>> nodes;
};

/// Makes `name`.crt/.key in the test certificate directory, signed by the
/// test CA `ca` ("ca" or "other-ca"), for both TLS server and client use;
/// returns the path without extension.
std::string make_node_cert(const std::string& name, const std::string& ca);

/// Returns the milliseconds since `start`.
inline long long millis_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace tb::test
