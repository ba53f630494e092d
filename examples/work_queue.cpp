// A work queue (async client): workers in one consumer group share the jobs
// and ack each when done; a worker that dies hands its jobs to the others.

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
constexpr const char* program = "work_queue";

using namespace std::chrono_literals;

// The --help text.
const std::string usage_text =
    "usage: work_queue [--server HOST:PORT] worker [--no-ack] "
    "[COUNT]\n"
    "       work_queue [--server HOST:PORT] publish COUNT\n"
    "Workers join group \"workers\" on \"jobs.>\"; --no-ack holds "
    "the jobs (kill it to see them move to another worker).\n"
    "Run two `worker` and one `publish 10`.\n"
    "The server defaults to $TINYBROKER_SERVER, else 127.0.0.1:7400;\n"
    "the token and TLS come from TINYBROKER_TOKEN, TINYBROKER_CA, ...\n";

// Prints how to call the example; returns the usage error code.
int usage() {
  std::cerr << usage_text;
  return 2;
}

// Handles jobs until `count` were handled (0 = forever).
int worker(const std::string& server, bool ack, long count) {
  // Declared before the client, so they outlive its callbacks.
  std::mutex mutex;
  std::condition_variable done;
  long handled = 0;
  bool ended = false;
  std::vector<tb::client::delivery> held; // --no-ack keeps them here
  auto client_settings = example::options_from_env(program);
  if (!example::reach_broker(server, client_settings, program))
    return 3;
  tb::client::async_client client{server, client_settings};
  tb::client::subscribe_options options;
  options.group = "workers";
  options.max_in_flight = 16;
  options.on_end = [&](const grpc::Status& status) {
    example::error(program)
        << "left the group: " << status.error_message() << "\n";
    std::lock_guard<std::mutex> guard{mutex};
    ended = true;
    done.notify_all();
  };
  auto sub = client.subscribe(
      "jobs.>",
      [&](tb::client::delivery job) {
        std::cout << "job " << job.payload() << " (attempt " << job.attempt()
                  << ")" << std::endl;
        std::lock_guard<std::mutex> guard{mutex};
        if (ack)
          job.ack(); // coalesced with other acks into one frame
        else
          held.push_back(std::move(job));
        ++handled;
        done.notify_all();
      },
      options);
  auto status = sub->wait_subscribed(10s);
  if (!status.ok()) {
    example::error(program)
        << "join failed: " << status.error_message() << "\n";
    return 1;
  }
  std::cout << "joined workers" << std::endl;
  std::unique_lock<std::mutex> guard{mutex};
  done.wait(guard, [&] { return ended || (count > 0 && handled >= count); });
  return ended ? 1 : 0;
}

// Publishes `count` jobs (batched by the client) and waits for the confirms.
int publish(const std::string& server, long count) {
  auto client_settings = example::options_from_env(program);
  if (!example::reach_broker(server, client_settings, program))
    return 3;
  tb::client::async_client client{server, client_settings};
  std::vector<std::future<tb::client::publish_result>> confirms;
  for (long i = 1; i <= count; ++i)
    confirms.push_back(
        client.publish({"jobs.resize", std::to_string(i), {}, {}}));
  client.flush();
  for (auto& confirm : confirms) {
    auto result = confirm.get();
    if (!result.ok()) {
      example::error(program)
          << "publish failed: " << result.status.error_message() << "\n";
      return 1;
    }
  }
  std::cout << "published " << count << " jobs" << std::endl;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto cmd = example::parse_command_line(argc, argv, program, usage_text);
  const auto& server = cmd.server;
  const auto& args = cmd.args;
  if (args.empty())
    return usage();
  if (args[0] == "worker") {
    bool ack = !(args.size() > 1 && args[1] == "--no-ack");
    auto rest = ack ? 1u : 2u;
    long count = args.size() > rest ? std::atol(args[rest].c_str()) : 0;
    return worker(server, ack, count);
  }
  if (args[0] == "publish" && args.size() == 2)
    return publish(server, std::atol(args[1].c_str()));
  return usage();
}
