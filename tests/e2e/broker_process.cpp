#include "broker_process.hpp"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace tb::test {

namespace {

// Forks and execs `binary` with stdout and stderr into a pipe (and stdin
// from `stdin_fd` if it is not -1); returns the pid and the pipe's read end.
std::pair<pid_t, int> spawn(const std::string& binary,
                            const std::vector<std::string>& args,
                            int stdin_fd = -1) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    std::abort();
  auto pid = fork();
  if (pid == 0) {
    // The child dies with the test (even one killed by ctest's timeout),
    // and inherits no descriptor but the output pipe (no lock files).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    if (stdin_fd >= 0)
      dup2(stdin_fd, STDIN_FILENO);
    close_range(3, ~0U, 0);
    std::vector<std::string> copy = args;
    std::string path = binary;
    std::vector<char*> argv{path.data()};
    for (auto& arg : copy)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

// Waits for `pid` up to `timeout`; returns its exit code (128 + signal if
// killed) or nothing.
std::optional<int> wait_for_pid(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    auto res = waitpid(pid, &status, WNOHANG);
    if (res == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (res < 0 || std::chrono::steady_clock::now() >= deadline)
      return std::nullopt;
    // Polling a child process: there is no portable blocking wait with a
    // timeout. This is process management, not test synchronisation.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Returns `args` plus `--metrics-listen off` unless they set the metrics
// address: tests start many brokers at once, which must not all try the
// default metrics port.
std::vector<std::string> metrics_off_unless_set(std::vector<std::string> args) {
  if (std::find(args.begin(), args.end(), "--metrics-listen") == args.end())
    args.insert(args.end(), {"--metrics-listen", "off"});
  return args;
}

// Returns `args` plus `--grpc-transport T` when the environment variable
// TINYBROKER_TEST_GRPC_TRANSPORT is T and `args` choose none: ctest reruns
// a subset of the end-to-end tests so on the transport that is not the
// default (tests/CMakeLists.txt, "other transport").
std::vector<std::string>
test_transport_unless_set(std::vector<std::string> args) {
  const char* transport = std::getenv("TINYBROKER_TEST_GRPC_TRANSPORT");
  if (transport != nullptr && *transport != '\0' &&
      std::find(args.begin(), args.end(), "--grpc-transport") == args.end())
    args.insert(args.end(), {"--grpc-transport", transport});
  return args;
}

// Arguments that make the broker listen on a free loopback port.
std::vector<std::string> free_port_args(std::vector<std::string> extra) {
  std::vector<std::string> args{"--listen", "127.0.0.1:0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return metrics_off_unless_set(std::move(args));
}

// Fails the running test if `output` (of the program `binary`) holds a
// sanitizer report. Under TSan a report stops the program (halt_on_error)
// but a test may have killed it already, or not look at its exit code.
void expect_no_sanitizer_report(const std::string& binary,
                                const std::string& output) {
  for (auto marker : {"WARNING: ThreadSanitizer:", "ERROR: AddressSanitizer:",
                      "ERROR: LeakSanitizer:", "runtime error:"})
    if (output.find(marker) != std::string::npos)
      ADD_FAILURE() << binary << " reported \"" << marker << "\":\n" << output;
}

} // namespace

child_process::child_process(const std::string& binary,
                             const std::vector<std::string>& args) {
  auto [pid, fd] = spawn(binary, args);
  binary_ = binary;
  pid_ = pid;
  reader_ = std::thread{[this, fd = fd] {
    read_output(fd);
  }};
}

child_process::~child_process() {
  if (!exit_code_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    wait_for_pid(pid_, std::chrono::seconds(10));
  }
  if (reader_.joinable())
    reader_.join();
  expect_no_sanitizer_report(binary_, output_);
}

void child_process::read_output(int fd) {
  char buf[4096];
  for (;;) {
    auto n = read(fd, buf, sizeof(buf));
    if (n <= 0)
      break;
    std::lock_guard<std::mutex> guard{mutex_};
    output_.append(buf, static_cast<size_t>(n));
    cv_.notify_all();
  }
  close(fd);
  std::lock_guard<std::mutex> guard{mutex_};
  output_closed_ = true;
  cv_.notify_all();
}

bool child_process::wait_for_output(const std::string& text,
                                    std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> guard{mutex_};
  return cv_.wait_for(guard, timeout, [&] {
    return output_.find(text) != std::string::npos || output_closed_;
  }) && output_.find(text) != std::string::npos;
}

bool child_process::wait_for_occurrences(const std::string& text,
                                         std::size_t count,
                                         std::chrono::milliseconds timeout) {
  auto enough = [&] {
    std::size_t n = 0;
    for (auto at = output_.find(text); at != std::string::npos && n < count;
         at = output_.find(text, at + text.size()))
      ++n;
    return n >= count;
  };
  std::unique_lock<std::mutex> guard{mutex_};
  return cv_.wait_for(guard, timeout, [&] {
    return enough() || output_closed_;
  }) && enough();
}

std::optional<int> child_process::stop(int signal,
                                       std::chrono::milliseconds timeout) {
  if (exit_code_)
    return exit_code_;
  kill(pid_, signal);
  return wait_exit(timeout);
}

namespace {

// Returns true if every thread of `pid` is stopped (state T or t in
// /proc/PID/task/TID/stat); false if one runs or the process is gone.
bool all_threads_stopped(pid_t pid) {
  auto tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code error;
  std::filesystem::directory_iterator dir{tasks, error};
  if (error)
    return false;
  for (auto& task : dir) {
    std::ifstream stat{task.path() / "stat"};
    std::string text{std::istreambuf_iterator<char>{stat}, {}};
    auto close = text.rfind(')');
    if (close == std::string::npos)
      continue; // the thread ended meanwhile
    auto state = text.find_first_not_of(' ', close + 1);
    if (state == std::string::npos ||
        (text[state] != 'T' && text[state] != 't'))
      return false;
  }
  return true;
}

} // namespace

bool child_process::pause(std::chrono::milliseconds timeout) {
  if (exit_code_ || kill(pid_, SIGSTOP) != 0)
    return false;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!all_threads_stopped(pid_)) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

std::optional<int> child_process::wait_exit(std::chrono::milliseconds timeout) {
  if (!exit_code_)
    exit_code_ = wait_for_pid(pid_, timeout);
  if (exit_code_) {
    // The process is gone, but the reader may not have taken its last
    // bytes yet: wait (briefly) for the end of its output.
    std::unique_lock<std::mutex> guard{mutex_};
    cv_.wait_for(guard, std::chrono::seconds(2),
                 [this] { return output_closed_; });
  }
  return exit_code_;
}

std::string child_process::output() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return output_;
}

broker_process::broker_process(std::vector<std::string> extra_args)
    : broker_process(std::move(extra_args), TINYBROKER_BINARY) {
  // nop
}

broker_process::broker_process(std::vector<std::string> extra_args,
                               const std::string& binary)
    : child_process(binary, free_port_args(binary == TINYBROKER_BINARY
                                               ? test_transport_unless_set(
                                                     std::move(extra_args))
                                               : std::move(extra_args))) {
  // nop
}

broker_process::broker_process(std::vector<std::string> extra_args,
                               default_listen_t)
    : child_process(TINYBROKER_BINARY,
                    metrics_off_unless_set(
                        test_transport_unless_set(std::move(extra_args)))) {
  // nop
}

bool broker_process::wait_ready(std::chrono::milliseconds timeout) {
  constexpr std::string_view marker = "listening on ";
  if (!wait_for_output(std::string{marker}, timeout))
    return false;
  auto out = output();
  auto start = out.find(marker) + marker.size();
  address_ = out.substr(start, out.find_first_of(" \n", start) - start);
  return true;
}

std::pair<int, std::string> run_command(const std::string& binary,
                                        const std::vector<std::string>& args,
                                        const std::string* input) {
  int stdin_fd = -1;
  if (input != nullptr) {
    auto path = write_temp_file(*input, ".txt");
    stdin_fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    unlink(path.c_str());
  }
  auto [pid, fd] = spawn(binary, args, stdin_fd);
  if (stdin_fd >= 0)
    close(stdin_fd);
  std::string output;
  char buf[4096];
  for (;;) {
    auto n = read(fd, buf, sizeof(buf));
    if (n <= 0)
      break;
    output.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  auto code = wait_for_pid(pid, std::chrono::seconds(20));
  expect_no_sanitizer_report(binary, output);
  return {code.value_or(-1), output};
}

std::pair<int, std::string> run_broker_command(std::vector<std::string> args) {
  return run_command(TINYBROKER_BINARY, args);
}

namespace {

// Returns true if a listener could bind `port` on loopback just now (0:
// any port; `port` then holds the kernel's choice).
bool bind_loopback(int& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (ok)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return ok;
}

// Returns the lowest port of the kernel's ephemeral range.
int ephemeral_low() {
  std::ifstream in{"/proc/sys/net/ipv4/ip_local_port_range"};
  int low = 0;
  return in >> low ? low : 0;
}

} // namespace

int free_loopback_port() {
  // Below the ephemeral range: no listener on port 0 and no outgoing
  // connection (of this test or one beside it) can take the port between
  // now and the broker's bind, as they did for a cluster node's port.
  static thread_local std::mt19937 random{std::random_device{}()};
  if (auto low = ephemeral_low(); low > 12000)
    for (int attempt = 0; attempt < 64; ++attempt) {
      int port = std::uniform_int_distribution<int>{10000, low - 1}(random);
      if (bind_loopback(port))
        return port;
    }
  int port = 0;
  return bind_loopback(port) ? port : 0;
}

silent_listener::silent_listener() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(fd_, 0) << "socket() failed";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  auto* any = reinterpret_cast<sockaddr*>(&addr);
  if (fd_ >= 0 && ::bind(fd_, any, len) == 0 && ::listen(fd_, 4) == 0 &&
      ::getsockname(fd_, any, &len) == 0)
    port_ = ntohs(addr.sin_port);
  EXPECT_NE(port_, 0) << "no silent listener on loopback";
}

silent_listener::~silent_listener() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string write_temp_file(const std::string& text, const std::string& ext) {
  std::string path = "/tmp/tinybroker-test-XXXXXX" + ext;
  auto fd = mkstemps(path.data(), static_cast<int>(ext.size()));
  if (fd < 0)
    std::abort();
  close(fd);
  std::ofstream out{path};
  out << text;
  return path;
}

} // namespace tb::test
