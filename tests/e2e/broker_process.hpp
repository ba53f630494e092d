// Starts the real tinybroker binary on a free loopback port for end-to-end
// tests, and stops it.

#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace tb::test {

/// A program started from the build tree, with its standard output and
/// error captured. A sanitizer report in its output fails the test.
class child_process {
public:
  /// Starts `binary` with `args`.
  child_process(const std::string& binary,
                const std::vector<std::string>& args);

  /// Kills the process if it still runs.
  ~child_process();

  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// Waits until the output contains `text`; false on exit or timeout.
  bool wait_for_output(const std::string& text,
                       std::chrono::milliseconds timeout);

  /// Sends `signal` and waits up to `timeout` for the exit; returns the
  /// exit code, or nothing if it did not exit in time.
  std::optional<int>
  stop(int signal,
       std::chrono::milliseconds timeout = std::chrono::seconds(15));

  /// Waits up to `timeout` for the process to exit by itself.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);

  /// Sends SIGSTOP and returns true once every thread of the process is
  /// stopped (false after `timeout`): kill() only queues the signal, and a
  /// thread still running could, say, confirm one more publish.
  bool pause(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  /// Waits until the output contains `text` at least `count` times; false
  /// on exit or timeout.
  bool wait_for_occurrences(const std::string& text, std::size_t count,
                            std::chrono::milliseconds timeout);

  /// Returns everything the process wrote so far.
  std::string output() const;

  /// Returns the process id.
  pid_t pid() const {
    return pid_;
  }

private:
  void read_output(int fd);

  std::string binary_;
  pid_t pid_ = -1;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::string output_;
  bool output_closed_ = false;
  std::optional<int> exit_code_;
};

/// A tinybroker process started from the build tree. Its metrics listener
/// is off (`--metrics-listen off` is added) unless the arguments set one.
class broker_process : public child_process {
public:
  /// Selects the broker's own default address instead of a free port.
  static constexpr struct default_listen_t {
  } default_listen{};

  /// Starts `tinybroker --listen 127.0.0.1:0` plus `extra_args`.
  explicit broker_process(std::vector<std::string> extra_args = {});

  /// Starts `binary` (a program running the broker, such as an example
  /// with its own policy) with `--listen 127.0.0.1:0` plus `extra_args`.
  broker_process(std::vector<std::string> extra_args,
                 const std::string& binary);

  /// Starts `tinybroker` with just `extra_args` (and the metrics listener
  /// off unless they set one), on its default address.
  broker_process(std::vector<std::string> extra_args, default_listen_t);

  /// Waits until the broker logs its address; false if it exited first or
  /// `timeout` passed.
  bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(20));

  /// Returns the `HOST:PORT` the broker listens on (after `wait_ready`).
  const std::string& address() const {
    return address_;
  }

private:
  std::string address_;
};

/// Runs `binary` with `args` (and `*input` as its standard input, if
/// given) to completion; returns its exit code and output. A sanitizer
/// report in the output fails the test.
std::pair<int, std::string> run_command(const std::string& binary,
                                        const std::vector<std::string>& args,
                                        const std::string* input = nullptr);

/// Runs the tinybroker binary with `args` to completion (for --help,
/// --version and bad configs); returns its exit code and output.
std::pair<int, std::string> run_broker_command(std::vector<std::string> args);

/// Returns a loopback port that was free a moment ago, or 0; below the
/// kernel's ephemeral range when it leaves room, so that no port-0
/// listener or outgoing connection takes it before it is bound.
int free_loopback_port();

/// A loopback port that takes connections (the kernel completes them, no
/// one accepts) and never speaks: a hung process, or a server that waits
/// for its client to speak first. Closed when destroyed.
class silent_listener {
public:
  /// Listens on a port the kernel picks; the test fails if it cannot.
  silent_listener();

  /// Closes the port.
  ~silent_listener();

  silent_listener(const silent_listener&) = delete;
  silent_listener& operator=(const silent_listener&) = delete;

  /// Returns the port (0 if listening failed).
  uint16_t port() const {
    return port_;
  }

  /// Returns "127.0.0.1:PORT", for a client's --server.
  std::string address() const {
    return "127.0.0.1:" + std::to_string(port_);
  }

private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

/// Writes `text` to a fresh temporary file and returns its path.
std::string write_temp_file(const std::string& text, const std::string& ext);

} // namespace tb::test
