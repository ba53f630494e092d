// The fixture of the tinybroker-cli end-to-end tests: runs the real
// tinybroker-cli binary against the test's broker and reads its output.

#pragma once

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e_fixture.hpp"

namespace tb::test {

/// Returns the path of the tinybroker-cli binary in the build tree.
inline std::string cli_binary() {
  return std::string{TINYBROKER_TOOLS_DIR} + "/tinybroker-cli";
}

/// Parses one JSON object; a parse error fails the test and yields an
/// empty object.
inline google::protobuf::Struct parse_json(const std::string& text) {
  google::protobuf::Struct result;
  auto status = google::protobuf::util::JsonStringToMessage(text, &result);
  EXPECT_TRUE(status.ok()) << status.ToString() << " in: " << text;
  return result;
}

/// Returns the lines of `text` that start with `prefix`.
inline std::vector<std::string> lines_starting_with(const std::string& text,
                                                    const std::string& prefix) {
  std::vector<std::string> result;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0)
      result.push_back(line);
  return result;
}

/// Returns the ids of the "published #ID to TOPIC" lines of `out`.
inline std::vector<uint64_t> published_ids(const std::string& out) {
  std::vector<uint64_t> ids;
  for (auto& line : lines_starting_with(out, "published #"))
    ids.push_back(std::stoull(line.substr(line.find('#') + 1)));
  return ids;
}

/// Returns how often `text` occurs in `out`.
inline std::size_t occurrences(const std::string& out,
                               const std::string& text) {
  std::size_t n = 0;
  for (auto pos = out.find(text); pos != std::string::npos;
       pos = out.find(text, pos + text.size()))
    ++n;
  return n;
}

/// Waits until `child` printed `text` at least `n` times; false if `timeout`
/// passed first. Polls: the child is another process.
inline bool wait_for_occurrences(const child_process& child,
                                 const std::string& text, std::size_t n,
                                 std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (occurrences(child.output(), text) < n) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

/// A loopback port that nothing listens on for as long as this object
/// lives: it holds the port bound but not listening, so connections are
/// refused and no broker of a test running in parallel can take it.
class closed_port {
public:
  closed_port() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }

  closed_port(const closed_port&) = delete;
  closed_port& operator=(const closed_port&) = delete;

  ~closed_port() {
    close(fd_);
  }

  /// Returns "127.0.0.1:PORT".
  std::string address() const {
    return "127.0.0.1:" + std::to_string(port_);
  }

private:
  int fd_;
  int port_ = 0;
};

/// A broker per test, and tinybroker-cli runs against it.
class CliTest : public BrokerTest {
protected:
  /// Returns `args` after `--server ADDRESS-OF-THE-TEST-BROKER`.
  std::vector<std::string> at_broker(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--server", broker_->address()});
    return args;
  }

  /// Runs tinybroker-cli against the broker to completion (with `input` on
  /// its standard input, if given); returns its exit code and output.
  std::pair<int, std::string> cli(std::vector<std::string> args,
                                  const std::string* input = nullptr) const {
    return run_command(cli_binary(), at_broker(std::move(args)), input);
  }

  /// Returns the counters of `group` (all zero if the broker has none).
  tinybroker::v1::GroupCounters group_counters(const std::string& group) {
    tinybroker::v1::ListGroupsReply reply;
    grpc::ClientContext ctx;
    EXPECT_TRUE(conn_->stub().ListGroups(&ctx, {}, &reply).ok());
    for (auto& info : reply.groups())
      if (info.name() == group)
        return info.counters();
    return {};
  }

  /// Starts a `tinybroker-cli sub ...` against the broker and waits until it
  /// says it subscribed.
  std::unique_ptr<child_process> start_sub(std::vector<std::string> args) {
    args.insert(args.begin(), "sub");
    auto child = std::make_unique<child_process>(cli_binary(), at_broker(args));
    EXPECT_TRUE(child->wait_for_output("subscribed to", patience))
        << child->output();
    return child;
  }
};

} // namespace tb::test
