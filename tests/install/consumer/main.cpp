// A program of a user's own, built against an installed tinybroker client
// (tests/install/install_test.sh): subscribes, publishes one message with a
// confirm, and prints it once it arrives. Exits 0 on success.
//
//   consumer HOST:PORT

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <string>

#include <tinybroker/client/async_client.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer HOST:PORT\n";
    return 2;
  }
  using namespace std::chrono_literals;
  tb::client::async_client client{argv[1]};
  std::mutex mutex;
  std::condition_variable arrived;
  std::string received;
  auto sub = client.subscribe("installed.>", [&](tb::client::delivery d) {
    std::lock_guard<std::mutex> guard{mutex};
    received = d.topic() + " " + d.payload();
    arrived.notify_all();
  });
  if (auto status = sub->wait_subscribed(5s); !status.ok()) {
    std::cerr << "consumer: subscribe failed: " << status.error_message()
              << "\n";
    return 1;
  }
  auto confirm = client.publish({"installed.check", "hello from outside"});
  if (confirm.wait_for(5s) != std::future_status::ready ||
      !confirm.get().status.ok()) {
    std::cerr << "consumer: publish not confirmed\n";
    return 1;
  }
  std::unique_lock<std::mutex> lock{mutex};
  if (!arrived.wait_for(lock, 5s, [&] { return !received.empty(); })) {
    std::cerr << "consumer: nothing arrived\n";
    return 1;
  }
  std::cout << "received " << received << "\n";
  return 0;
}
