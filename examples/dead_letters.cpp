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

namespace {

using namespace std::chrono_literals;

// The client's settings: the token and TLS files of the TINYBROKER_*
// variables (TINYBROKER_TOKEN, TINYBROKER_CA, ...; docs/client.md,
// "Security"); exits with 2 if they cannot be used.
tb::client::client_options from_env() {
  tb::client::client_options options;
  try {
    options.security = tb::client::security_from_env();
    tb::client::make_channel_credentials(options.security); // reads the files
  } catch (const tb::client::security_error& e) {
    std::cerr << "dead_letters: " << e.what() << "\n";
    std::exit(2);
  }
  return options;
}

// The group of this example, and how often it tries a message.
constexpr const char* group_name = "payments";
constexpr uint32_t max_deliveries = 3;

int usage() {
  std::cerr << "usage: dead_letters [--server HOST:PORT]\n"
               "Creates group \"payments\" on \"payments.>\" (max_deliveries "
               "3), publishes two good messages and a poison one, nacks the "
               "poison until it reaches $dlq.payments, and prints it there.\n"
               "The server defaults to 127.0.0.1:7400.\n";
  return 2;
}

int run(const std::string& server) {
  // Declared before the client, so they outlive its callbacks.
  std::mutex mutex;
  std::condition_variable arrived;
  bool got_dead_letter = false;
  tb::client::async_client client{server, from_env()};

  tinybroker::v1::GroupSettings settings;
  settings.set_pattern("payments.>");
  settings.set_max_deliveries(max_deliveries);
  auto created = client.create_group(group_name, settings);
  if (!created.ok()) {
    std::cerr << "create group failed: " << created.error_message() << "\n";
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
      std::cerr << "subscribe to " << sub->pattern()
                << " failed: " << status.error_message() << "\n";
      return 1;
    }
  }

  for (auto payload : {"ok 1", "poison", "ok 2"})
    client.publish({"payments.eu", payload, {}, {}});
  if (!client.flush(10s)) {
    std::cerr << "the broker did not confirm the messages\n";
    return 1;
  }
  std::unique_lock<std::mutex> guard{mutex};
  if (!arrived.wait_for(guard, 30s, [&] { return got_dead_letter; })) {
    std::cerr << "no dead letter within 30 s\n";
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string server = "127.0.0.1:7400";
  if (args.size() == 2 && args[0] == "--server")
    server = args[1];
  else if (!args.empty())
    return usage();
  return run(server);
}
