// Child processes of the tinybroker-soak coordinator: started with
// fork/exec, their output appended to a file, killed for real.

#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace tb::soak {

/// A child process; killed with SIGKILL (and reaped) when destroyed if it
/// still runs.
class child {
public:
  /// Starts `binary` with `args`, its standard output and error appended
  /// to `output_file`. The child dies with the coordinator.
  child(const std::string& binary, const std::vector<std::string>& args,
        const std::string& output_file);

  /// Kills and reaps the process if it still runs.
  ~child();

  child(const child&) = delete;
  child& operator=(const child&) = delete;

  /// The process id.
  pid_t pid() const {
    return pid_;
  }

  /// True until the process was reaped.
  bool running();

  /// Sends `signal`.
  void signal(int signal);

  /// Waits up to `timeout` for the exit; returns the exit code (128 +
  /// signal number when killed), or nothing.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);

  /// Sends `signal`, waits up to `timeout`, then SIGKILLs; returns the exit
  /// code as `wait_exit` does, or nothing if it needed SIGKILL.
  std::optional<int> stop(int signal, std::chrono::milliseconds timeout);

private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

/// Returns the resident memory of process `pid` in KiB (VmRSS of
/// /proc/PID/status), or -1 if it cannot be read.
long long resident_kib(pid_t pid);

/// Returns the path of the running program (/proc/self/exe).
std::string self_path();

/// Waits up to `timeout` until `path` exists.
bool wait_for_file(const std::string& path, std::chrono::milliseconds timeout);

/// Waits up to `timeout` until the file `path` contains `text`; returns
/// the rest of the line after it, or nothing.
std::optional<std::string> wait_for_text(const std::string& path,
                                         const std::string& text,
                                         std::chrono::milliseconds timeout);

} // namespace tb::soak
