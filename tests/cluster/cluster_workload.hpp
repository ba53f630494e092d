// Publishers and workers of one consumer group across a test cluster, as
// threads of the test process (issue 32 point 5, docs/cluster.md
// "Replicas"): publishers send numbered messages with the unary Publish
// call (a result without error is a confirmed publish) and workers join the
// group and ack each delivery at once, recording its key and attempt. When
// a node goes away, its clients move to the next node of the address book;
// the test updates the book when it restarts a node. `check()` then says
// what was lost, duplicated and redelivered.

#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace tb::test {

/// What a workload runs.
struct workload_options {
  /// The group the workers join.
  std::string group;
  /// The group's pattern (the workers join with it).
  std::string pattern;
  /// The topic prefix: publisher i sends to `<prefix>.<i>`.
  std::string prefix;
  /// Publisher threads.
  int publishers = 2;
  /// Worker threads.
  int workers = 4;
  /// Messages per publish call.
  int batch = 10;
  /// Messages per second per publisher.
  double rate = 400;
  /// Each worker's max_in_flight.
  uint32_t max_in_flight = 16;
};

/// The verdict on a workload's records.
struct workload_result {
  /// Messages whose publish was confirmed.
  uint64_t confirmed = 0;
  /// Messages refused (a result with an error, or a failed call).
  uint64_t refused = 0;
  /// Deliveries the workers recorded (all attempts).
  uint64_t deliveries = 0;
  /// Confirmed messages never delivered.
  uint64_t lost = 0;
  /// Deliveries of a message after its first one.
  uint64_t duplicates = 0;
  /// Of those, deliveries with attempt > 1 (they say they are one).
  uint64_t redeliveries = 0;
  /// Deliveries that repeated an attempt number of their message.
  uint64_t same_attempt = 0;
  /// Delivered keys no publisher sent.
  uint64_t unknown = 0;
  /// Up to 5 lost keys.
  std::vector<std::string> lost_examples;
  /// The longest time between two confirmed publishes while publishing, ms.
  long long longest_confirm_gap_ms = 0;
  /// Why publishes were refused, with counts.
  std::map<std::string, uint64_t> refusals;

  /// One line for the test's output.
  std::string summary() const;
};

/// The publishers and workers; see the file comment.
class cluster_workload {
public:
  /// Plans a workload; `use_nodes` and `set_address` say where its
  /// clients go, `start` starts them.
  explicit cluster_workload(workload_options options);

  /// Stops every thread.
  ~cluster_workload();

  cluster_workload(const cluster_workload&) = delete;
  cluster_workload& operator=(const cluster_workload&) = delete;

  /// Sets node `name`'s gRPC address ("" while it is down).
  void set_address(const std::string& name, const std::string& address);

  /// Publishers use these nodes (names), workers those; each client moves
  /// to the next of its list when its node fails. Call before `start`.
  void use_nodes(std::vector<std::string> publisher_nodes,
                 std::vector<std::string> worker_nodes);

  /// Starts the threads.
  void start();

  /// Stops the publishers (the workers go on).
  void stop_publishing();

  /// With true, the workers stop reading and answering: what the owner
  /// sent them stays in flight and the rest piles up pending, so a node
  /// killed now holds messages. False: they go on.
  void hold(bool on) {
    holding_ = on;
  }

  /// Waits until every confirmed message was delivered and no delivery
  /// came for `quiet`; false after `timeout`.
  bool drain(std::chrono::milliseconds timeout,
             std::chrono::milliseconds quiet = std::chrono::milliseconds(500));

  /// Stops every thread (idempotent).
  void stop();

  /// Checks the records.
  workload_result check() const;

  /// Messages confirmed so far.
  uint64_t confirmed() const;

  /// Deliveries recorded so far.
  uint64_t deliveries() const;

  /// The time of the first delivery recorded at or after `t` (or nothing
  /// yet: `t` itself is returned with `*found` false).
  std::chrono::steady_clock::time_point
  first_delivery_after(std::chrono::steady_clock::time_point t,
                       bool* found) const;

  /// The largest number of deliveries the workers can hold unanswered at
  /// once (workers * max_in_flight): the bound on duplicates per failover.
  uint64_t in_flight_bound() const {
    return static_cast<uint64_t>(options_.workers) * options_.max_in_flight;
  }

private:
  struct delivery_record {
    uint32_t count = 0;
    uint64_t attempts_seen = 0; // bit a-1 for attempt a (a <= 64)
    bool same_attempt = false;
  };

  std::string address_of(const std::vector<std::string>& names, size_t& at);
  void publisher_loop(int index);
  void worker_loop(int index);

  workload_options options_;
  mutable std::mutex mtx_;
  std::map<std::string, std::string> book_;
  std::vector<std::string> publisher_nodes_, worker_nodes_;
  std::unordered_map<std::string, bool> sent_; // key -> confirmed
  std::map<std::string, uint64_t> refusals_;
  std::unordered_map<std::string, delivery_record> delivered_;
  std::vector<std::chrono::steady_clock::time_point> delivery_times_;
  std::chrono::steady_clock::time_point last_confirm_{};
  long long longest_gap_ms_ = 0;
  uint64_t deliveries_ = 0;
  std::atomic<bool> publishing_{false};
  std::atomic<bool> running_{false};
  std::atomic<bool> holding_{false};
  std::vector<std::thread> threads_;
};

} // namespace tb::test
