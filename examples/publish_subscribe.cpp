// Fan-out publish/subscribe with wildcards, using the tinybroker C++ client.
// Run `publish_subscribe sub 'orders.>'` in one terminal and
// `publish_subscribe pub orders.eu.created hello` in another.

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "net/client.hpp"

namespace {

namespace pb = tinybroker::v1;

int usage() {
  std::cerr << "usage: publish_subscribe [--server HOST:PORT] sub PATTERN "
               "[COUNT]\n"
               "       publish_subscribe [--server HOST:PORT] pub TOPIC DATA\n"
               "The server defaults to 127.0.0.1:7400.\n";
  return 2;
}

// Prints deliveries until `count` arrived (0 = forever) or the stream ends.
int subscribe(tb::client::connection& conn, const std::string& pattern,
              long count) {
  auto session = conn.open_session();
  session->subscribe(1, pattern);
  auto ready = session->next(std::chrono::seconds(10));
  if (!ready || ready->kind_case() != pb::ServerFrame::kSubscribed) {
    std::cerr << "subscribe failed: "
              << (ready && ready->has_error()
                      ? ready->error().error().message()
                      : session->status().error_message())
              << "\n";
    return 1;
  }
  std::cout << "subscribed to " << pattern << std::endl;
  long received = 0;
  while (count == 0 || received < count) {
    auto frame = session->next(std::chrono::hours(24));
    if (!frame)
      break;
    if (frame->has_dropped())
      std::cout << "lost " << frame->dropped().count() << " messages (too slow)"
                << std::endl;
    for (auto& d : frame->deliveries().deliveries()) {
      std::cout << "#" << d.message_id() << " " << d.topic() << ": "
                << d.payload() << std::endl;
      ++received;
    }
  }
  return 0;
}

// Publishes one message and prints the id the broker gave it.
int publish(tb::client::connection& conn, const std::string& topic,
            const std::string& data) {
  std::vector<pb::PublishResult> results;
  auto status = conn.publish({{topic, data, {}, {}}}, &results);
  if (!status.ok()) {
    std::cerr << "publish failed: " << status.error_message() << "\n";
    return 1;
  }
  if (results.size() == 1 && results[0].has_error()) {
    std::cerr << "refused: " << results[0].error().message() << "\n";
    return 1;
  }
  std::cout << "published #" << results.at(0).id() << std::endl;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string server = "127.0.0.1:7400";
  if (args.size() >= 2 && args[0] == "--server") {
    server = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() < 2)
    return usage();
  tb::client::connection conn{server};
  if (args[0] == "sub")
    return subscribe(conn, args[1],
                     args.size() > 2 ? std::atol(args[2].c_str()) : 0);
  if (args[0] == "pub" && args.size() == 3)
    return publish(conn, args[1], args[2]);
  return usage();
}
