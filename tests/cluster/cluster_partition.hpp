// A network partition between broker processes on loopback, for the
// cluster tests (issue 32 point 5, docs/cluster.md "Replicas"): the
// kernel's packet filter (nftables) drops every packet between one node's
// cluster connections and the other nodes' cluster ports, in a table of
// its own that `heal()` (or the destructor) deletes.
//
// On loopback every packet passes the output hook once, so one chain
// there does it all:
//   - any packet to or from the isolated node's cluster port (the
//     connections the others dialed to it);
//   - any packet to or from the local ports of the isolated process's
//     connections to the others' cluster ports (the ones it dialed), found
//     through /proc/<pid>/fd and /proc/net/tcp;
//   - any new connection (SYN) to the others' cluster ports while the
//     partition lasts (the isolated node dialing again; the others' own
//     connection stays up and is not dialed again).
// The gRPC ports are left alone: clients still reach every node.
//
// Needs root (CAP_NET_ADMIN) and the `nft` command (scripts/setup.sh
// installs nftables); `why_unavailable()` says what is missing.
//
// A table left behind outlives the test: its rules go on dropping packets
// of any later connection that reuses one of its port numbers, which looks
// like a lost SYN to every other test on the machine. So `heal()` checks
// that the table is gone (and fails the test if it is not), a new partition
// first deletes the tables of processes that no longer run, and
// scripts/setup.sh deletes every such table before the tests run.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

namespace tb::test {

/// One partition: a process cut off from some cluster ports.
class loopback_partition {
public:
  /// A partition not yet made.
  loopback_partition();

  /// Heals the partition if it still stands.
  ~loopback_partition();

  loopback_partition(const loopback_partition&) = delete;
  loopback_partition& operator=(const loopback_partition&) = delete;

  /// Returns why partitions cannot be made here ("" if they can): not root,
  /// or no `nft` command.
  static std::string why_unavailable();

  /// Cuts the process `pid`, whose cluster port is `own_port`, off from the
  /// cluster ports `others` (both ways); false and `*why` on failure.
  bool isolate(pid_t pid, uint16_t own_port,
               const std::vector<uint16_t>& others, std::string* why);

  /// Deletes the table and checks that it is gone (a few attempts; the
  /// test fails if it stays): traffic flows again. Safe to call twice.
  void heal();

  /// Deletes the partition tables (`tb_partition_<pid>`) whose process no
  /// longer runs; returns how many.
  static int remove_stale_tables();

  /// Returns the local ports of `pid`'s TCP connections whose remote port is
  /// one of `remote_ports` (from /proc).
  static std::vector<uint16_t>
  connection_ports(pid_t pid, const std::vector<uint16_t>& remote_ports);

  /// Returns how many packets the table dropped so far (0 without it).
  uint64_t dropped() const;

  /// The name of this partition's nftables table (inet family).
  const std::string& table() const {
    return table_;
  }

private:
  std::string table_;
  bool active_ = false;
};

} // namespace tb::test
