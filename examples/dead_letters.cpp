// Dead letters (async client): a worker nacks a poison message until its
// group's max_deliveries is spent; it then lands on `$dlq.<group>`.

#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "client/async_client.hpp"
#include "example_args.hpp"

namespace {

/// The name errors start with.
constexpr const char* program = "dead_letters";

using namespace std::chrono_literals;

// The group of this example, and how often it tries a message.
constexpr const char* group_name = "payments";
constexpr uint32_t max_deliveries = 3;

// The --help text.
const std::string usage_text =
    "usage: dead_letters [--server HOST:PORT]\n"
    "Creates group \"payments\" on \"payments.>\" (max_deliveries "
    "3), publishes two good messages and a poison one, nacks the "
    "poison until it reaches $dlq.payments, and prints it there.\n"
    "The server defaults to $TINYBROKER_SERVER, else 127.0.0.1:7400; the token "
    "and TLS come from TINYBROKER_TOKEN, TINYBROKER_CA, ... "
    "(docs/client.md).\n";

// Prints how to call the example; returns the usage error code.
int usage() {
  std::cerr << usage_text;
  return 2;
}

int run(const std::string& server) {
  // Declared before the client, so they outlive its callbacks.
  std::mutex mutex;
  std::condition_variable arrived;
  bool got_dead_letter = false;
  auto client_settings = example::options_from_env(program);
  if (!example::reach_broker(server, client_settings, program))
    return 3;
  tb::client::async_client client{server, client_settings};

  tinybroker::v1::GroupSettings settings;
  settings.set_pattern("payments.>");
  settings.set_max_deliveries(max_deliveries);
  auto created = client.create_group(group_name, settings);
  if (!created.ok()) {
    example::error(program)
        << "create group failed: " << created.error_message() << "\n";
    return 1;
  }

  // A fan-out subscriber on every dead letter topic.
  auto dlq = client.subscribe("$dlq.>", [&](tb::client::delivery letter) {
    std::cout << "dead letter on " << letter.topic() << ": " << letter.payload()
              << std::endl;
    std::map<std::string, std::string> sorted{letter.headers().begin(),
                                              letter.headers().end()};
    for (auto& [name, value] : sorted)
      std::cout << "  " << name << ": " << value << std::endl;
    std::lock_guard<std::mutex> guard{mutex};
    got_dead_letter = true;
    arrived.notify_all();
  });

  // The worker: acks good messages, nacks the poison one every time.
  tb::client::subscribe_options join;
  join.group = group_name;
  auto worker = client.subscribe(
      "payments.>",
      [](tb::client::delivery d) {
        if (d.payload() == "poison") {
          std::cout << "nack " << d.payload() << " (attempt " << d.attempt()
                    << ")" << std::endl;
          d.nack();
        } else {
          std::cout << "ack " << d.payload() << std::endl;
          d.ack();
        }
      },
      join);
  for (auto* sub : {dlq.get(), worker.get()}) {
    auto status = sub->wait_subscribed(10s);
    if (!status.ok()) {
      example::error(program) << "subscribe to " << sub->pattern()
                              << " failed: " << status.error_message() << "\n";
      return 1;
    }
  }

  for (auto payload : {"ok 1", "poison", "ok 2"})
    client.publish({"payments.eu", payload, {}, {}});
  if (!client.flush(10s)) {
    example::error(program) << "the broker did not confirm the messages\n";
    return 1;
  }
  std::unique_lock<std::mutex> guard{mutex};
  if (!arrived.wait_for(guard, 30s, [&] { return got_dead_letter; })) {
    example::error(program) << "no dead letter within 30 s\n";
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto cmd = example::parse_command_line(argc, argv, program, usage_text);
  if (!cmd.args.empty())
    return usage();
  return run(cmd.server);
}
