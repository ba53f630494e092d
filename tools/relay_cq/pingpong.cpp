// tinybroker-pingpong: gRPC's streaming round trip on this machine, one
// message in flight. One client thread on one Session stream subscribes to
// pingpong.>, then publishes one message and waits for its delivery on the
// same stream, N times; against tinybroker-relay (callback API),
// tinybroker-relay-cq (completion queues) or a broker, that is the
// transport's round-trip floor with each server form (docs/performance.md,
// "The floors: callback vs completion-queue").

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include "tinybroker.grpc.pb.h"

namespace {

namespace pb = tinybroker::v1;
using pingpong_clock = std::chrono::steady_clock;

// CPU seconds (user + system) of this process.
double pingpong_own_cpu() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) /
             1e6;
}

// CPU seconds of process `pid` from /proc (clock ticks), or -1.
double pingpong_pid_cpu(long pid) {
  if (pid <= 0)
    return -1;
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string stat((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');
  if (close == std::string::npos)
    return -1;
  // Fields after the command: state is field 3; utime 14, stime 15.
  std::vector<std::string> fields;
  std::size_t pos = close + 2;
  while (pos < stat.size() && fields.size() < 13) {
    auto end = stat.find(' ', pos);
    fields.push_back(stat.substr(pos, end - pos));
    pos = end == std::string::npos ? stat.size() : end + 1;
  }
  if (fields.size() < 13)
    return -1;
  auto ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::stod(fields[11]) + std::stod(fields[12])) / ticks;
}

// Nearest-rank percentile of sorted `v`.
double pingpong_rank(const std::vector<double>& v, double p) {
  auto i = static_cast<std::size_t>(p * static_cast<double>(v.size()));
  return v[std::min(i, v.size() - 1)];
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"tinybroker-pingpong: one stream, one message in flight: "
               "publish, wait for its delivery, again; prints the round "
               "trip's p50/p99 in microseconds and both sides' CPU."};
  std::string server = "127.0.0.1:7402";
  unsigned messages = 20000;
  unsigned warmup = 1000;
  unsigned size = 128;
  long server_pid = 0;
  bool json = false;
  app.add_option("--server", server, "HOST:PORT of a relay or a broker")
      ->capture_default_str();
  app.add_option("--messages", messages, "round trips measured")
      ->capture_default_str()
      ->check(CLI::Range(1u, 10000000u));
  app.add_option("--warmup", warmup, "round trips before measuring")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1000000u));
  app.add_option("--size", size, "payload bytes")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1u << 20));
  app.add_option("--server-pid", server_pid,
                 "the server's process id: its CPU over the run");
  app.add_flag("--json", json, "one JSON object instead of text");
  app.set_version_flag("--version", std::string{"tinybroker-pingpong "} +
                                        TINYBROKER_VERSION);
  CLI11_PARSE(app, argc, argv);

  auto channel =
      grpc::CreateChannel(server, grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                 std::chrono::seconds(5))) {
    std::fprintf(stderr, "tinybroker-pingpong: cannot connect to %s\n",
                 server.c_str());
    return 2;
  }
  auto stub = pb::Broker::NewStub(channel);
  grpc::ClientContext context;
  auto stream = stub->Session(&context);
  pb::ClientFrame frame;
  frame.set_request_id(1);
  frame.mutable_subscribe()->set_subscription_id(1);
  frame.mutable_subscribe()->set_pattern("pingpong.>");
  pb::ServerFrame in;
  if (!stream->Write(frame) || !stream->Read(&in) || !in.has_subscribed()) {
    std::fprintf(stderr,
                 "tinybroker-pingpong: the subscribe was not "
                 "answered (%s)\n",
                 stream->Finish().error_message().c_str());
    return 2;
  }
  frame.Clear();
  auto* msg = frame.mutable_publish()->add_messages();
  msg->set_topic("pingpong.t");
  msg->set_payload(std::string(size, 'x'));
  std::vector<double> rtt_us;
  rtt_us.reserve(messages);
  double cpu0 = 0, server0 = 0;
  auto t0 = pingpong_clock::now();
  for (unsigned i = 0; i < warmup + messages; ++i) {
    if (i == warmup) {
      cpu0 = pingpong_own_cpu();
      server0 = pingpong_pid_cpu(server_pid);
      t0 = pingpong_clock::now();
    }
    auto sent = pingpong_clock::now();
    if (!stream->Write(frame)) {
      std::fprintf(stderr, "tinybroker-pingpong: the stream ended\n");
      return 1;
    }
    do {
      if (!stream->Read(&in)) {
        std::fprintf(stderr, "tinybroker-pingpong: the stream ended: %s\n",
                     stream->Finish().error_message().c_str());
        return 1;
      }
    } while (!in.has_deliveries());
    if (i >= warmup)
      rtt_us.push_back(std::chrono::duration<double, std::micro>(
                           pingpong_clock::now() - sent)
                           .count());
  }
  double elapsed =
      std::chrono::duration<double>(pingpong_clock::now() - t0).count();
  double cpu = pingpong_own_cpu() - cpu0;
  double server_cpu =
      server_pid > 0 ? pingpong_pid_cpu(server_pid) - server0 : -1;
  stream->WritesDone();
  stream->Finish();
  std::sort(rtt_us.begin(), rtt_us.end());
  double p50 = pingpong_rank(rtt_us, 0.50), p99 = pingpong_rank(rtt_us, 0.99);
  double rate = static_cast<double>(messages) / elapsed;
  if (json)
    std::printf("{\"messages\":%u,\"elapsed_s\":%.3f,\"round_trips_per_s\":"
                "%.0f,\"rtt_us\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f},"
                "\"client_cpu_s\":%.3f,\"server_cpu_s\":%s}\n",
                messages, elapsed, rate, p50, p99, rtt_us.back(), cpu,
                server_cpu < 0 ? "null" : std::to_string(server_cpu).c_str());
  else
    std::printf("%u round trips in %.2f s (%.0f/s): p50 %.1f us, p99 %.1f "
                "us, max %.1f us; client CPU %.3f s, server CPU %s s\n",
                messages, elapsed, rate, p50, p99, rtt_us.back(), cpu,
                server_cpu < 0 ? "-" : std::to_string(server_cpu).c_str());
  return 0;
}
