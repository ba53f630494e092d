// A work queue: workers in one consumer group share the messages, each
// acked after it was handled; a worker that dies hands its messages on.
// Run two `work_queue worker` and one `work_queue publish 10`.

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "net/client.hpp"

namespace {

namespace pb = tinybroker::v1;

int usage() {
  std::cerr << "usage: work_queue [--server HOST:PORT] worker [--no-ack] "
               "[COUNT]\n"
               "       work_queue [--server HOST:PORT] publish COUNT\n"
               "Workers join group \"workers\" on \"jobs.>\"; --no-ack holds "
               "the jobs (kill it to see them move to another worker).\n";
  return 2;
}

// Handles jobs until `count` were handled (0 = forever).
int worker(tb::client::connection& conn, bool ack, long count) {
  auto session = conn.open_session();
  session->join(1, "workers", "jobs.>", 16);
  auto ready = session->next(std::chrono::seconds(10));
  if (!ready || ready->kind_case() != pb::ServerFrame::kSubscribed) {
    std::cerr << "join failed: "
              << (ready && ready->has_error() ? ready->error().error().message()
                                              : "no answer")
              << "\n";
    return 1;
  }
  std::cout << "joined workers" << std::endl;
  long handled = 0;
  while (count == 0 || handled < count) {
    auto frame = session->next(std::chrono::hours(24));
    if (!frame)
      break;
    std::vector<uint64_t> done;
    for (auto& d : frame->deliveries().deliveries()) {
      std::cout << "job " << d.payload() << " (attempt " << d.attempt() << ")"
                << std::endl;
      done.push_back(d.delivery_id());
      ++handled;
    }
    if (ack && !done.empty())
      session->ack(done);
  }
  return 0;
}

// Publishes `count` jobs in one batch.
int publish(tb::client::connection& conn, long count) {
  std::vector<tb::client::outgoing_message> jobs;
  for (long i = 1; i <= count; ++i)
    jobs.push_back({"jobs.resize", std::to_string(i), {}, {}});
  std::vector<pb::PublishResult> results;
  auto status = conn.publish(jobs, &results);
  if (!status.ok()) {
    std::cerr << "publish failed: " << status.error_message() << "\n";
    return 1;
  }
  std::cout << "published " << results.size() << " jobs" << std::endl;
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
  if (args.empty())
    return usage();
  tb::client::connection conn{server};
  if (args[0] == "worker") {
    bool ack = !(args.size() > 1 && args[1] == "--no-ack");
    auto rest = ack ? 1u : 2u;
    long count = args.size() > rest ? std::atol(args[rest].c_str()) : 0;
    return worker(conn, ack, count);
  }
  if (args[0] == "publish" && args.size() == 2)
    return publish(conn, std::atol(args[1].c_str()));
  return usage();
}
