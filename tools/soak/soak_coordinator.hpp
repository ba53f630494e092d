// The coordinator of tinybroker-soak: runs the broker and the role
// children, kills and restarts workers, drains, checks and reports.

#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/soak/soak_check.hpp"

namespace tb::soak {

/// The settings of a soak run; the defaults are the 10-minute soak.
struct soak_config {
  /// A running broker's `HOST:PORT` (loopback); empty: start one.
  std::string server;
  /// The running broker's process id, for RSS (with `server`).
  int broker_pid = 0;
  /// The broker program to start when `server` is empty.
  std::string broker_binary;
  /// How long the publishers publish.
  std::chrono::milliseconds duration{10 * 60 * 1000};
  /// Publisher processes.
  unsigned publishers = 2;
  /// Messages per second per publisher.
  double rate = 500;
  /// Fan-out subscriber processes.
  unsigned subscribers = 2;
  /// Group worker processes.
  unsigned workers = 4;
  /// Broker nodes: 1 runs one broker; 3 or more run a cluster whose
  /// group lives on one node while the workers sit on two others, and one
  /// of those is killed and restarted every `node_kill_every`.
  unsigned nodes = 1;
  /// The mean time between node kills (with `nodes` > 1).
  std::chrono::milliseconds node_kill_every{10000};
  /// Cluster: copies of the group on other nodes (GroupSettings.replicas,
  /// issue 32): 0 or 1. With 1 the node kills alternate between the two
  /// nodes the publishers do not use, so the group's owner and its replica
  /// die in turn, and the subscribers and RSS watch use the publishers'
  /// node.
  unsigned replicas = 0;
  /// The mean time between worker kills.
  std::chrono::milliseconds kill_every{2000};
  /// Workers' microseconds of work per delivery, so kills find messages
  /// in flight.
  long long work_us = 1000;
  /// Workers reject sequence numbers that are 7 modulo this (0: none).
  uint64_t reject_every = 500;
  /// The random seed (0: from the clock).
  uint64_t seed = 0;
  /// Allowed RSS growth, percent of the start plateau.
  double rss_margin_pct = 20;
  /// Allowed RSS growth, MiB (the larger of the two applies).
  double rss_margin_mib = 8;
  /// How long the group may take to drain after the publishers stop.
  std::chrono::milliseconds drain_timeout{60000};
  /// Where logs go; empty: a fresh directory under /tmp.
  std::string work_dir;
  /// Keep the work directory after a passing run (a failing run, or one
  /// given `work_dir`, always keeps it).
  bool keep_logs = false;
  /// Print the report as JSON.
  bool json = false;
};

/// What a soak run found.
struct soak_report {
  /// The run's id (group `soak-<id>`, topics `soak.<id>.>`).
  std::string run_id;
  /// Where the logs are.
  std::string work_dir;
  /// Seconds of load, and of the whole run.
  double load_seconds = 0, total_seconds = 0;
  /// The group's messages, from the logs.
  ledger::result group;
  /// Workers killed with SIGKILL, and workers that exited on their own.
  uint64_t kills = 0, worker_exits = 0;
  /// Cluster: nodes killed with SIGKILL (each with its workers), and the
  /// node that owns the group, that takes the publishers and that is
  /// killed.
  uint64_t node_kills = 0;
  /// Cluster with replicas: node kills that hit the group's owner, and its
  /// replica (as the publishers' node listed them just before).
  uint64_t owner_kills = 0, replica_kills = 0;
  /// Cluster: the names of the group's owner node, the node the publishers
  /// and half the workers use, and the node killed (with the other half).
  std::string owner_node, stable_node, victim_node;
  /// Fan-out: messages received, dropped (told by the broker) and out of
  /// order, over all subscribers.
  uint64_t fanout_received = 0, fanout_dropped = 0, fanout_out_of_order = 0;
  /// Subscribers whose received + dropped did not add up to the published.
  uint64_t fanout_incomplete = 0;
  /// The broker's group counters at the end.
  uint64_t broker_received = 0, broker_acked = 0, broker_dead_lettered = 0,
           broker_redelivered = 0, broker_pending = 0, broker_in_flight = 0;
  /// True when the group drained within the drain timeout.
  bool drained = false;
  /// The broker's RSS over the load phase, and the verdict on it.
  std::vector<rss_sample> rss;
  /// The verdict on `rss`.
  rss_verdict rss_result;
  /// The broker's exit code after SIGTERM (-1: not started here, or it
  /// needed SIGKILL), and the seconds it took.
  int broker_exit = -1;
  /// Seconds from SIGTERM to the broker's exit.
  double broker_stop_seconds = 0;
  /// Every failed check, one sentence each.
  std::vector<std::string> failures;
};

/// Runs a soak as `cfg` says; fills `report`. Returns an exit_code.
int run_soak(const soak_config& cfg, soak_report& report);

/// Prints `report` as compact text (or JSON) on standard output.
void print_report(const soak_config& cfg, const soak_report& report);

} // namespace tb::soak
