#include "tools/soak/soak_process.hpp"

#include <climits>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tb::soak {

namespace {

// How often the coordinator polls a child or a file. Polling a process or
// a file it writes is process management; nothing else is timed by it.
constexpr std::chrono::milliseconds poll_interval{20};

} // namespace

child::child(const std::string& binary, const std::vector<std::string>& args,
             const std::string& output_file) {
  auto out = ::open(output_file.c_str(),
                    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0)
    return;
  auto parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    auto devnull = ::open("/dev/null", O_RDONLY);
    dup2(devnull, STDIN_FILENO);
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
  ::close(out);
}

child::~child() {
  if (running())
    stop(SIGKILL, std::chrono::seconds(10));
}

bool child::running() {
  if (pid_ <= 0 || exit_code_)
    return false;
  return !wait_exit(std::chrono::milliseconds(0));
}

void child::signal(int signal) {
  if (pid_ > 0 && !exit_code_)
    ::kill(pid_, signal);
}

std::optional<int> child::wait_exit(std::chrono::milliseconds timeout) {
  if (exit_code_ || pid_ <= 0)
    return exit_code_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    auto res = waitpid(pid_, &status, WNOHANG);
    if (res == pid_) {
      exit_code_ =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (res < 0 || std::chrono::steady_clock::now() >= deadline)
      return std::nullopt;
    std::this_thread::sleep_for(poll_interval);
  }
}

std::optional<int> child::stop(int signal, std::chrono::milliseconds timeout) {
  this->signal(signal);
  if (auto code = wait_exit(timeout))
    return code;
  this->signal(SIGKILL);
  wait_exit(std::chrono::seconds(10));
  return std::nullopt;
}

long long resident_kib(pid_t pid) {
  std::ifstream status{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) != 0)
      continue;
    std::istringstream fields{line.substr(6)};
    long long kib = -1;
    fields >> kib;
    return kib;
  }
  return -1;
}

std::string self_path() {
  char buf[PATH_MAX];
  auto n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
}

bool wait_for_file(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (access(path.c_str(), F_OK) != 0) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(poll_interval);
  }
  return true;
}

std::optional<std::string> wait_for_text(const std::string& path,
                                         const std::string& text,
                                         std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::ifstream in{path};
    std::string line;
    while (std::getline(in, line)) {
      auto at = line.find(text);
      if (at != std::string::npos)
        return line.substr(at + text.size());
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return std::nullopt;
    std::this_thread::sleep_for(poll_interval);
  }
}

} // namespace tb::soak
