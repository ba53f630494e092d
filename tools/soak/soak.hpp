// tinybroker-soak: a bounded soak test of a tinybroker process. One program
// in several roles: the coordinator (the default) starts the broker and
// child processes of this same program as publishers, fan-out subscribers
// and group workers, kills and restarts workers at random with SIGKILL, then
// drains the group and checks every message (docs/operations.md, "Soak
// test"). The role children record what they did in append-only log files
// that survive a SIGKILL, and the coordinator reads them at the end.

#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tb::soak {

/// Exit codes of every role.
enum exit_code : int {
  /// All checks passed.
  exit_ok = 0,
  /// A check failed: a message lost, duplicated, out of order, or RSS grew.
  exit_failed = 1,
  /// Bad command line, or the broker or a stream could not be used.
  exit_usage = 2,
};

/// Where a worker kills itself (with SIGKILL) for the fault tests.
enum class die_point {
  /// Never.
  none,
  /// After answering half of a Deliveries frame, before the rest.
  batch,
  /// Right after sending the answers of a frame, while they are in flight.
  ack,
  /// Right after a Deliveries frame arrived, before handling any of it.
  delivery,
};

/// The settings of one role; each role reads the fields it needs.
struct role_config {
  /// The broker's `HOST:PORT` (loopback).
  std::string server;
  /// The log file the role appends its records to.
  std::string log;
  /// A file created once the role is subscribed (empty: none).
  std::string ready_file;
  /// Publisher: its index, which names its keys (`p<index>-<seq>`).
  unsigned index = 0;
  /// Publisher: messages per second.
  double rate = 500;
  /// Publisher: how long to publish.
  std::chrono::milliseconds duration{60000};
  /// Publisher: messages per Publish call.
  unsigned batch = 20;
  /// Publisher: payload bytes (at least the key).
  std::size_t size = 64;
  /// Publisher: the topic prefix (`<prefix>.<index>.<k>`).
  std::string topic_prefix = "soak";
  /// Subscriber and worker: the pattern.
  std::string pattern = "soak.>";
  /// Worker: the consumer group.
  std::string group = "soak";
  /// Worker: the most unacked deliveries held.
  uint32_t max_in_flight = 64;
  /// Worker: rejects messages whose sequence number modulo this is 7 (0:
  /// never), so some go to the dead letter topic.
  uint64_t reject_every = 0;
  /// Worker: the time it "works" on each delivery before answering it.
  std::chrono::microseconds work{0};
  /// Worker: where it kills itself, if anywhere.
  die_point die_at = die_point::none;
  /// Worker: the deliveries it handles before `die_at` applies.
  uint64_t die_after = 0;
};

/// Runs a publisher: publishes `rate` messages a second for `duration` with
/// unary Publish calls and appends `<key> <id>` per accepted message (and
/// `! <key> <reason>` per refused one) to `log`. Stops early on SIGTERM.
int run_publisher(const role_config& cfg);

/// Runs a fan-out subscriber of `pattern` until SIGTERM; checks each
/// publisher's order and writes `received N dropped D out_of_order O` to
/// `log` at the end; with `record_keys`, appends each key too (for the
/// dead letter topic).
int run_subscriber(const role_config& cfg, bool record_keys);

/// Runs a group worker until SIGTERM (or `die_at`): for each Deliveries
/// frame, appends `<key> <message id> <attempt> <a|r>` per delivery to
/// `log` in one write, then acks (or rejects) them in one frame each.
int run_worker(const role_config& cfg);

/// Returns the key (`p<index>-<seq>`) at the start of a payload.
std::string key_of(const std::string& payload);

/// Returns the sequence number in a key, or UINT64_MAX if it has none.
uint64_t seq_of(const std::string& key);

/// Returns the publisher index in a key, or UINT64_MAX if it has none.
uint64_t publisher_of(const std::string& key);

/// True for a loopback `HOST:PORT` (127.x, localhost, [::1]): the soak
/// never talks to another host.
bool is_loopback(const std::string& address);

/// Installs a SIGTERM and SIGINT handler that sets the flag `stopping()`
/// reads.
void install_stop_handler();

/// True once SIGTERM or SIGINT arrived.
bool stopping();

/// Appends `text` to the file descriptor `fd` in one write (retrying a
/// short write); false on error.
bool append(int fd, const std::string& text);

} // namespace tb::soak
