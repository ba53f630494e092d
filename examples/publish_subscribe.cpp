// Fan-out with wildcards (async client): every subscription whose pattern
// matches gets its own copy; `*` is one token, `>` one or more, at the end.

#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "client/async_client.hpp"
#include "example_args.hpp"

namespace {

/// The name errors start with.
constexpr const char* program = "publish_subscribe";

using namespace std::chrono_literals;

// The --help text.
const std::string usage_text =
    "usage: publish_subscribe [--server HOST:PORT] sub PATTERN "
    "[COUNT]\n"
    "       publish_subscribe [--server HOST:PORT] pub TOPIC DATA...\n"
    "Run `sub 'orders.>'` in one terminal, then `pub "
    "orders.eu.created hello` in another.\n"
    "The server defaults to $TINYBROKER_SERVER, else 127.0.0.1:7400; the token "
    "and TLS come from TINYBROKER_TOKEN, TINYBROKER_CA, ... "
    "(docs/client.md).\n";

// Prints how to call the example; returns the usage error code.
int usage() {
  std::cerr << usage_text;
  return 2;
}

// Prints deliveries until `count` arrived (0 = forever) or it ended.
int subscribe(const std::string& server, const std::string& pattern,
              long count) {
  // Declared before the client, so they outlive its callbacks.
  std::mutex mutex;
  std::condition_variable done;
  long received = 0;
  bool ended = false;
  auto client_settings = example::options_from_env(program);
  if (!example::reach_broker(server, client_settings, program))
    return 3;
  tb::client::async_client client{server, client_settings};
  tb::client::subscribe_options options;
  options.on_dropped = [](uint64_t lost) {
    std::cout << "lost " << lost << " messages (too slow)" << std::endl;
  };
  options.on_end = [&](const grpc::Status& status) {
    example::error(program)
        << "subscription ended: " << status.error_message() << "\n";
    std::lock_guard<std::mutex> guard{mutex};
    ended = true;
    done.notify_all();
  };
  auto sub = client.subscribe(
      pattern,
      [&](tb::client::delivery d) {
        std::cout << "#" << d.message_id() << " " << d.topic() << ": "
                  << d.payload() << std::endl;
        std::lock_guard<std::mutex> guard{mutex};
        ++received;
        done.notify_all();
      },
      options);
  auto status = sub->wait_subscribed(10s);
  if (!status.ok()) {
    example::error(program)
        << "subscribe failed: " << status.error_message() << "\n";
    return 1;
  }
  std::cout << "subscribed to " << pattern << std::endl;
  std::unique_lock<std::mutex> guard{mutex};
  done.wait(guard, [&] { return ended || (count > 0 && received >= count); });
  return ended ? 1 : 0;
}

// Publishes each of `data` to `topic` (one batch) and prints their ids.
int publish(const std::string& server, const std::string& topic,
            const std::vector<std::string>& data) {
  auto client_settings = example::options_from_env(program);
  if (!example::reach_broker(server, client_settings, program))
    return 3;
  tb::client::async_client client{server, client_settings};
  std::vector<std::future<tb::client::publish_result>> confirms;
  for (auto& payload : data)
    confirms.push_back(client.publish({topic, payload, {}, {}}));
  client.flush();
  int failures = 0;
  for (auto& confirm : confirms) {
    auto result = confirm.get();
    if (result.ok()) {
      std::cout << "published #" << result.id << std::endl;
    } else {
      example::error(program) << "refused (" << result.status.error_code()
                              << "): " << result.status.error_message() << "\n";
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  auto cmd = example::parse_command_line(argc, argv, program, usage_text);
  const auto& server = cmd.server;
  const auto& args = cmd.args;
  if (args.size() < 2)
    return usage();
  if (args[0] == "sub")
    return subscribe(server, args[1],
                     args.size() > 2 ? std::atol(args[2].c_str()) : 0);
  if (args[0] == "pub" && args.size() >= 3)
    return publish(server, args[1], {args.begin() + 2, args.end()});
  return usage();
}
