// The nodes of a cluster soak (tinybroker-soak --nodes N, docs/operations.md
// "Soak test"): broker processes on free loopback ports, each with a
// [cluster] config naming all the others, started, killed with SIGKILL and
// started again by the coordinator, as a host that dies and comes back.

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/soak/soak_process.hpp"

namespace tb::soak {

/// The broker nodes of one cluster soak.
class soak_cluster {
public:
  /// Plans `nodes` nodes named n1, n2, ... of `broker_binary`, their configs
  /// and output in `dir`; nothing starts yet.
  soak_cluster(std::string broker_binary, std::string dir, std::size_t nodes);

  /// Starts every node, then waits until each reports ready; false (and
  /// why on stderr) if one did not within 30 s.
  bool start_all();

  /// Starts node `i` (again) and waits until it is ready; false (and why
  /// on stderr) if it was not within 30 s.
  bool start(std::size_t i);

  /// Kills node `i` with SIGKILL and reaps it, as a crash of its host.
  void kill(std::size_t i);

  /// Stops node `i` with SIGTERM; returns its exit code, or nothing if it
  /// needed SIGKILL after `timeout`.
  std::optional<int> stop(std::size_t i, std::chrono::milliseconds timeout);

  /// Returns the number of nodes.
  std::size_t size() const {
    return nodes_.size();
  }

  /// Returns node `i`'s gRPC address (`127.0.0.1:PORT`, new at each start).
  const std::string& address(std::size_t i) const {
    return nodes_[i].address;
  }

  /// Returns node `i`'s name.
  const std::string& name(std::size_t i) const {
    return nodes_[i].name;
  }

  /// Returns node `i`'s process id, or 0 while it is not running.
  int pid(std::size_t i) const;

  /// Returns the index of the node called `name`, or nothing.
  std::optional<std::size_t> index_of(const std::string& name) const;

  /// How often nodes were started again after a kill.
  uint64_t restarts() const {
    return restarts_;
  }

private:
  struct node {
    std::string name;
    uint16_t cluster_port = 0;
    std::string config;
    std::string address;
    unsigned generation = 0;
    std::string output;
    std::unique_ptr<child> process;
  };

  // Starts node `i` without waiting.
  void launch(std::size_t i);

  // Waits until node `i` logged its gRPC address; false after `timeout`.
  bool wait_ready(std::size_t i, std::chrono::milliseconds timeout);

  std::string binary_;
  std::string dir_;
  std::vector<node> nodes_;
  uint64_t restarts_ = 0;
};

} // namespace tb::soak
