// tinybroker-nats-bench: the fan-out scenarios of tinybroker-bench (S1, S2,
// S4) against NATS core, through NATS's own C client (libnats), so that
// scripts/cq_floor.py (its `nats` form) can run both brokers in one run,
// interleaved, in the same conditions: clients on their own connections,
// natural batching (the client library's write buffer and its flusher thread),
// the same payload layout and the same JSON keys as tinybroker-bench's report.
//
// Not a test and not shipped: a measuring tool (docs/performance.md, "Side
// by side with NATS core").

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nats/nats.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace {

/// What a run does: the scenario's shape and its limits.
struct nats_run_config {
  std::string server = "127.0.0.1:4222";
  std::string scenario = "s1";
  uint64_t messages = 0;
  size_t size = 128;
  double rate = 0;
  unsigned subscribers = 1;
  bool paced = false;
  bool send_asap = false;
  double max_seconds = 120;
  bool json = false;
  /// The server's process id, to report its CPU over the run; 0: none.
  int broker_pid = 0;
};

/// How far a paced publisher may run ahead of the slowest subscriber, in
/// messages: tinybroker-bench's 64 frames of 256.
constexpr uint64_t paced_ahead = 64 * 256;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6;
  };
  return secs(usage.ru_utime) + secs(usage.ru_stime);
}

/// User + system CPU seconds of process `pid` from /proc, or -1.
double process_cpu_seconds(int pid) {
  if (pid <= 0)
    return -1;
  auto path = "/proc/" + std::to_string(pid) + "/stat";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f)
    return -1;
  char buf[1024] = {};
  auto n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string stat(buf, n);
  auto paren = stat.rfind(')');
  if (paren == std::string::npos)
    return -1;
  // After the name: state is field 3; utime and stime are fields 14, 15.
  unsigned long long utime = 0, stime = 0;
  if (std::sscanf(stat.c_str() + paren + 1,
                  " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                  &utime, &stime) != 2)
    return -1;
  return static_cast<double>(utime + stime) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

/// One subscriber connection: what it received, in order or not, and the
/// latency of each message (s4 only).
struct subscriber {
  natsConnection* conn = nullptr;
  natsSubscription* sub = nullptr;
  std::atomic<uint64_t> received{0};
  std::atomic<int64_t> last_at{0};
  uint64_t out_of_order = 0;
  uint64_t next_seq = 0;
  bool record_latency = false;
  std::vector<uint32_t> latency_us;
};

void on_message(natsConnection*, natsSubscription*, natsMsg* msg,
                void* closure) {
  auto* self = static_cast<subscriber*>(closure);
  auto now = now_ns();
  const char* data = natsMsg_GetData(msg);
  if (natsMsg_GetDataLength(msg) >= 16) {
    int64_t stamp = 0;
    uint64_t seq = 0;
    std::memcpy(&stamp, data, sizeof stamp);
    std::memcpy(&seq, data + 8, sizeof seq);
    if (seq < self->next_seq)
      ++self->out_of_order;
    self->next_seq = seq + 1;
    if (self->record_latency)
      self->latency_us.push_back(
          static_cast<uint32_t>(std::max<int64_t>(0, now - stamp) / 1000));
  }
  natsMsg_Destroy(msg);
  self->last_at.store(now, std::memory_order_relaxed);
  self->received.fetch_add(1, std::memory_order_release);
}

bool check(natsStatus status, const char* what) {
  if (status == NATS_OK)
    return true;
  std::fprintf(stderr, "tinybroker-nats-bench: %s: %s\n", what,
               natsStatus_GetText(status));
  return false;
}

/// Connects to `server`; with `send_asap`, each publish is written at once
/// instead of by libnats's flusher thread, which waits about a millisecond
/// to batch (NATS's Go client flushes without that wait).
natsConnection* connect_to(const std::string& server, bool send_asap) {
  natsOptions* opts = nullptr;
  natsConnection* conn = nullptr;
  auto url = "nats://" + server;
  bool ok = check(natsOptions_Create(&opts), "options") &&
            check(natsOptions_SetURL(opts, url.c_str()), url.c_str()) &&
            check(natsOptions_SetSendAsap(opts, send_asap), "send asap");
  if (ok) {
    auto status = natsConnection_Connect(&conn, opts);
    if (status != NATS_OK) {
      // A broker of another protocol (tinybroker's gRPC port) accepts the
      // connection and never sends NATS's INFO line: "Timeout".
      std::fprintf(stderr,
                   "tinybroker-nats-bench: cannot connect to %s: %s; is "
                   "nats-server listening there? (--server HOST:PORT)\n",
                   url.c_str(), natsStatus_GetText(status));
      ok = false;
    }
  }
  natsOptions_Destroy(opts);
  return ok ? conn : nullptr;
}

uint64_t slowest(const std::vector<std::unique_ptr<subscriber>>& subs) {
  uint64_t least = UINT64_MAX;
  for (auto& s : subs)
    least = std::min(least, s->received.load(std::memory_order_acquire));
  return least;
}

/// Publishes cfg.messages on `subject`: as fast as the connection takes them,
/// paced against the slowest subscriber, or at cfg.rate with each payload
/// stamped with its scheduled send time.
bool publish_all(natsConnection* conn, const std::string& subject,
                 const nats_run_config& cfg,
                 const std::vector<std::unique_ptr<subscriber>>& subs,
                 int64_t start_ns, int64_t deadline_ns) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  std::string payload(std::max<size_t>(cfg.size, 16), 'x');
  for (uint64_t seq = 0; seq < cfg.messages; ++seq) {
    int64_t stamp = now_ns();
    if (cfg.rate > 0) {
      stamp = start_ns +
              static_cast<int64_t>(static_cast<double>(seq) * 1e9 / cfg.rate);
      if (stamp > now_ns())
        std::this_thread::sleep_until(std::chrono::steady_clock::time_point{
            std::chrono::nanoseconds{stamp}});
    }
    while (cfg.paced && seq > slowest(subs) + paced_ahead) {
      if (now_ns() > deadline_ns)
        return false;
      std::this_thread::sleep_for(std::chrono::microseconds{100});
    }
    std::memcpy(payload.data(), &stamp, sizeof stamp);
    std::memcpy(payload.data() + 8, &seq, sizeof seq);
    if (!check(natsConnection_Publish(conn, subject.c_str(), payload.data(),
                                      static_cast<int>(cfg.size)),
               "publish"))
      return false;
  }
  return check(natsConnection_Flush(conn), "flush");
}

double percentile(std::vector<uint32_t>& all, double p) {
  if (all.empty())
    return 0;
  auto k = static_cast<size_t>(p * static_cast<double>(all.size() - 1));
  std::nth_element(all.begin(), all.begin() + static_cast<long>(k), all.end());
  return all[k];
}

int run(const nats_run_config& cfg) {
  auto run_id = std::to_string(now_ns() % 1000000007);
  auto subject = "bench." + run_id + ".t";
  std::vector<std::unique_ptr<subscriber>> subs;
  for (unsigned i = 0; i < cfg.subscribers; ++i) {
    auto s = std::make_unique<subscriber>();
    s->record_latency = cfg.rate > 0;
    if (s->record_latency)
      s->latency_us.reserve(cfg.messages);
    s->conn = connect_to(cfg.server, false);
    if (!s->conn ||
        !check(natsConnection_Subscribe(&s->sub, s->conn,
                                        ("bench." + run_id + ".>").c_str(),
                                        on_message, s.get()),
               "subscribe") ||
        !check(natsSubscription_SetPendingLimits(s->sub, -1, -1),
               "pending limits") ||
        !check(natsConnection_Flush(s->conn), "flush"))
      return 2;
    subs.push_back(std::move(s));
  }
  auto* pub = connect_to(cfg.server, cfg.send_asap);
  if (!pub)
    return 2;
  auto cpu_before = cpu_seconds();
  auto server_before = process_cpu_seconds(cfg.broker_pid);
  auto start = now_ns();
  auto deadline = start + static_cast<int64_t>(cfg.max_seconds * 1e9);
  bool published = publish_all(pub, subject, cfg, subs, start, deadline);
  auto publish_end = now_ns();
  while (published && slowest(subs) < cfg.messages && now_ns() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds{200});
  bool timed_out = slowest(subs) < cfg.messages;
  int64_t last = start;
  uint64_t received = 0, out_of_order = 0, dropped = 0;
  std::vector<uint32_t> latency;
  for (auto& s : subs) {
    int64_t lost = 0;
    natsSubscription_GetDropped(s->sub, &lost);
    dropped += static_cast<uint64_t>(lost);
    natsSubscription_Unsubscribe(s->sub);
    last = std::max(last, s->last_at.load());
    received += s->received.load();
    out_of_order += s->out_of_order;
    latency.insert(latency.end(), s->latency_us.begin(), s->latency_us.end());
  }
  auto bench_cpu = cpu_seconds() - cpu_before;
  auto server_after = process_cpu_seconds(cfg.broker_pid);
  double server_cpu = server_before >= 0 && server_after >= 0
                          ? server_after - server_before
                          : -1;
  double elapsed_s = static_cast<double>(now_ns() - start) / 1e9;
  double deliver_s = static_cast<double>(last - start) / 1e9;
  double publish_s = static_cast<double>(publish_end - start) / 1e9;
  uint64_t expected = cfg.messages * cfg.subscribers;
  double p50 = percentile(latency, 0.50), p99 = percentile(latency, 0.99);
  if (cfg.json) {
    std::printf(
        "{\"scenario\":\"%s\",\"server\":\"%s\",\"broker\":\"nats\","
        "\"messages\":%llu,\"size\":%zu,\"subscribers\":%u,\"paced\":%s,"
        "\"rate\":%.1f,\"publish_s\":%.6f,\"deliver_s\":%.6f,"
        "\"delivered_msgs_per_s\":%.1f,\"sent\":%llu,\"received\":%llu,"
        "\"missing\":%llu,\"dropped\":%llu,\"out_of_order\":%llu,"
        "\"latency_us\":{\"samples\":%zu,\"p50\":%.1f,\"p99\":%.1f},"
        "\"elapsed_s\":%.6f,\"broker_cpu_s\":%.3f,\"bench_cpu_s\":%.3f,"
        "\"timed_out\":%s}\n",
        cfg.scenario.c_str(), cfg.server.c_str(),
        static_cast<unsigned long long>(cfg.messages), cfg.size,
        cfg.subscribers, cfg.paced ? "true" : "false", cfg.rate, publish_s,
        deliver_s,
        deliver_s > 0 ? static_cast<double>(received) / deliver_s : 0,
        static_cast<unsigned long long>(cfg.messages),
        static_cast<unsigned long long>(received),
        static_cast<unsigned long long>(expected -
                                        std::min(expected, received)),
        static_cast<unsigned long long>(dropped),
        static_cast<unsigned long long>(out_of_order), latency.size(), p50, p99,
        elapsed_s, server_cpu, bench_cpu, timed_out ? "true" : "false");
  } else {
    std::printf("%s: %llu of %llu delivered, %.0f msgs/s, p50 %.0f us, p99 "
                "%.0f us, load generator CPU %.3f s%s\n",
                cfg.scenario.c_str(), static_cast<unsigned long long>(received),
                static_cast<unsigned long long>(expected),
                deliver_s > 0 ? static_cast<double>(received) / deliver_s : 0,
                p50, p99, bench_cpu, timed_out ? " (timed out)" : "");
  }
  for (auto& s : subs) {
    natsSubscription_Destroy(s->sub);
    natsConnection_Destroy(s->conn);
  }
  natsConnection_Destroy(pub);
  return timed_out || !published ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
  nats_run_config cfg;
  CLI::App app{"tinybroker-nats-bench: tinybroker-bench's S1, S2 and S4 "
               "against NATS core (libnats), for scripts/cq_floor.py"};
  app.add_option("--server", cfg.server, "NATS server HOST:PORT");
  app.add_option("--scenario", cfg.scenario,
                 "s1 (1 -> 1), s2 (1 -> 4), s4 (1 -> 1 at --rate)")
      ->check(CLI::IsMember({"s1", "s2", "s4"}));
  app.add_option("--messages", cfg.messages,
                 "messages to publish (s1/s2: 1,000,000; s4: 10 s at --rate)");
  app.add_option("--size", cfg.size, "payload bytes (at least 16)")
      ->check(CLI::Range(16, 1 << 20));
  app.add_option("--rate", cfg.rate, "messages per second (s4: 5000)");
  app.add_flag("--paced", cfg.paced,
               "stay at most 16,384 messages ahead of the slowest subscriber");
  auto* asap = app.add_flag(
      "--send-asap,!--no-send-asap", cfg.send_asap,
      "write each publish at once (default for s4), not by libnats's flusher");
  app.add_option("--max-seconds", cfg.max_seconds, "give up after this long");
  app.add_option("--broker-pid", cfg.broker_pid,
                 "the server's pid: report its CPU seconds over the run");
  app.add_flag("--json", cfg.json, "one JSON object, as tinybroker-bench's");
  app.set_version_flag("--version", std::string{"tinybroker-nats-bench "} +
                                        TINYBROKER_VERSION);
  app.footer("Example, against nats-server -a 127.0.0.1 -p 4222:\n"
             "  tinybroker-nats-bench --scenario s1 --paced --json\n"
             "  tinybroker-nats-bench --scenario s4 --rate 5000");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) // --help, --version
      return app.exit(e);
    std::fprintf(stderr, "tinybroker-nats-bench: %s; see --help\n", e.what());
    return 2;
  }
  if (cfg.scenario == "s2")
    cfg.subscribers = 4;
  if (cfg.scenario == "s4" && cfg.rate <= 0)
    cfg.rate = 5000;
  if (cfg.scenario == "s4" && asap->count() == 0)
    cfg.send_asap = true;
  if (cfg.messages == 0)
    cfg.messages =
        cfg.rate > 0 ? static_cast<uint64_t>(cfg.rate * 10) : 1'000'000;
  int rc = run(cfg);
  nats_Close();
  return rc;
}
