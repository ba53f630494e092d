// The state of one tinybroker-soak run (tools/soak/soak_coordinator.cpp
// starts, loads and drains; tools/soak/soak_finish.cpp stops, checks, and
// for a cluster places the roles and kills the victim node).

#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "client/connection.hpp"
#include "tools/soak/soak_cluster.hpp"
#include "tools/soak/soak_coordinator.hpp"
#include "tools/soak/soak_process.hpp"

namespace tb::soak::detail {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;
/// The coordinator's clock.
using clock_type = std::chrono::steady_clock;

/// How often the coordinator looks at its children and the broker's RSS.
constexpr auto tick = 50ms;

/// How often RSS is sampled.
constexpr auto sample_every = 1s;

/// Returns the seconds between two time points.
inline double seconds(clock_type::time_point from, clock_type::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

/// Returns the counters of group `name`, or nothing.
std::optional<pb::GroupCounters> counters_of(client::connection& conn,
                                             const std::string& name);

/// Counts the lines of `path`.
uint64_t line_count(const std::string& path);

/// The state of one run.
class run {
public:
  /// Prepares a run of `cfg` that fills `report`.
  run(const soak_config& cfg, soak_report& report)
      : cfg_(cfg), report_(report), self_(self_path()),
        rng_(cfg.seed != 0 ? cfg.seed : std::random_device{}()) {
    // nop
  }

  /// Runs it; returns an exit_code.
  int operator()();

private:
  // Starts this program in `role` with `args`; its output goes to
  // `<name>.out` and its records to `<name>.log`.
  // With a cluster, `server` names the node (default: `server_`).
  std::unique_ptr<child> spawn(const std::string& role, const std::string& name,
                               std::vector<std::string> args,
                               const std::string& server = {}) {
    std::vector<std::string> all{role, "--server",
                                 server.empty() ? server_ : server, "--log",
                                 dir_ + "/" + name + ".log"};
    all.insert(all.end(), args.begin(), args.end());
    return std::make_unique<child>(self_, all, dir_ + "/" + name + ".out");
  }

  // Starts worker `slot` (its next generation).
  void start_worker(std::size_t slot) {
    auto name = "worker-" + std::to_string(slot) + "-" +
                std::to_string(generation_[slot]++);
    worker_logs_.push_back(dir_ + "/" + name + ".log");
    auto node = worker_node(slot);
    workers_[slot] = spawn("worker", name,
                           {"--group", group_, "--pattern", pattern_,
                            "--reject-every", std::to_string(cfg_.reject_every),
                            "--work-us", std::to_string(cfg_.work_us)},
                           node != no_node ? cluster_->address(node) : server_);
  }

  /// No node (one broker, or the publishers' node).
  static constexpr std::size_t no_node = static_cast<std::size_t>(-1);

  // Cluster: the node worker `slot` uses when it is not the publishers'
  // (no_node): every other worker sits on the node that gets killed; with
  // replicas, every fourth on the group's first owner, the other node
  // killed in turn. None use the group's node without replicas.
  std::size_t worker_node(std::size_t slot) const {
    if (!cluster_ || slot % 2 == 1)
      return no_node;
    return cfg_.replicas > 0 && slot % 4 == 2 ? owner_ : victim_;
  }

  // Cluster: the node the next kill hits. Without replicas the victim; with
  // replicas, in turn, the group's current owner and its replica (as the
  // publishers' node lists them) unless that is the publishers' node, then
  // the victim or the group's first owner; counts owner and replica kills.
  std::size_t pick_victim();

  bool place_roles(const pb::GroupInfo& info);
  bool kill_victim();

  bool start_broker();
  bool start_roles();
  void load_phase();
  void drain();
  void stop_roles();
  void check();
  void stop_broker();

  void fail(std::string sentence) {
    report_.failures.push_back(std::move(sentence));
  }

  const soak_config& cfg_;
  soak_report& report_;
  std::string self_;
  std::mt19937_64 rng_;
  std::string dir_, server_, group_, pattern_;
  int broker_pid_ = 0;
  std::unique_ptr<child> broker_;
  std::unique_ptr<soak_cluster> cluster_;
  std::size_t owner_ = 0, stable_ = 0, victim_ = 0;
  std::unique_ptr<client::connection> conn_;
  std::unique_ptr<child> dead_letters_;
  std::vector<std::unique_ptr<child>> subscribers_, publishers_, workers_;
  std::vector<unsigned> generation_;
  std::vector<std::string> worker_logs_;
  ledger ledger_;
};

} // namespace tb::soak::detail
