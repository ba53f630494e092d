#include "tools/bench_report.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

namespace tb::bench {

namespace {

// Returns the 0-based index of the nearest-rank `p` quantile of `n` values.
std::size_t rank_index(std::size_t n, double p) {
  auto rank = static_cast<std::size_t>(p * static_cast<double>(n) + 0.999999);
  return std::clamp<std::size_t>(rank, 1, n) - 1;
}

// Returns `value` as a decimal string.
std::string count(uint64_t value) {
  return std::to_string(value);
}

} // namespace

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {
std::atomic<bool> json_errors{false};
} // namespace

void set_json_errors(bool on) {
  json_errors = on;
}

void error(const char* code, const std::string& message) {
  if (json_errors)
    std::fprintf(stderr, "{\"error\":{\"code\":\"%s\",\"message\":%s}}\n", code,
                 json_string(message).c_str());
  else
    std::fprintf(stderr, "tinybroker-bench: %s\n", message.c_str());
}

void errorf(const char* code, const char* format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  error(code, buf);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double seconds_between(int64_t from, int64_t to) {
  return static_cast<double>(to - from) / 1e9;
}

std::string random_run_id() {
  std::random_device rd;
  auto value = (static_cast<uint64_t>(rd()) << 32) | rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(value));
  return buf;
}

long long resident_kib(int pid) {
  std::ifstream status{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) != 0)
      continue;
    std::istringstream fields{line.substr(6)};
    long long kib = -1;
    fields >> kib;
    return kib;
  }
  return -1;
}

double cpu_seconds(int pid) {
  std::ifstream stat{"/proc/" + std::to_string(pid) + "/stat"};
  std::string line;
  if (!std::getline(stat, line))
    return -1;
  // The name (field 2) may hold spaces; fields 14 and 15, utime and stime
  // in clock ticks, are the 12th and 13th after its closing parenthesis.
  auto close = line.rfind(')');
  if (close == std::string::npos)
    return -1;
  std::istringstream fields{line.substr(close + 1)};
  std::string skipped;
  for (int i = 0; i < 11 && fields >> skipped; ++i)
    ;
  unsigned long long user = 0;
  unsigned long long system = 0;
  if (!(fields >> user >> system))
    return -1;
  auto ticks = sysconf(_SC_CLK_TCK);
  return ticks > 0
             ? static_cast<double>(user + system) / static_cast<double>(ticks)
             : -1;
}

progress_printer::progress_printer(std::function<uint64_t()> sent,
                                   std::function<uint64_t()> received)
    : sent_(std::move(sent)), received_(std::move(received)) {
  thread_ = std::thread{[this] {
    run();
  }};
}

progress_printer::~progress_printer() {
  stop();
}

void progress_printer::stop() {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void progress_printer::run() {
  using namespace std::chrono_literals;
  uint64_t previous = 0;
  auto next = std::chrono::steady_clock::now() + 1s;
  std::unique_lock<std::mutex> guard{mutex_};
  while (!cv_.wait_until(guard, next, [this] { return stop_; })) {
    auto received = received_();
    std::fprintf(stderr, "sent %llu, received %llu, %llu msgs/s\n",
                 static_cast<unsigned long long>(sent_()),
                 static_cast<unsigned long long>(received),
                 static_cast<unsigned long long>(received - previous));
    previous = received;
    next += 1s;
  }
}

latency_summary summarize_latency(std::vector<int64_t>& samples_ns) {
  latency_summary result;
  result.samples = samples_ns.size();
  if (samples_ns.empty())
    return result;
  auto first = samples_ns.begin();
  auto n = samples_ns.size();
  // Each nth_element leaves only larger values to its right, so the next,
  // higher quantile can be searched there.
  double* outputs[] = {&result.p50_us, &result.p99_us, &result.p999_us};
  double quantiles[] = {0.5, 0.99, 0.999};
  auto from = first;
  for (int i = 0; i < 3; ++i) {
    auto nth = first + static_cast<std::ptrdiff_t>(rank_index(n, quantiles[i]));
    std::nth_element(from, nth, samples_ns.end());
    *outputs[i] = static_cast<double>(*nth) / 1e3;
    from = nth;
  }
  result.max_us =
      static_cast<double>(*std::max_element(from, samples_ns.end())) / 1e3;
  return result;
}

double rate(uint64_t count, double seconds) {
  return seconds > 0 ? static_cast<double>(count) / seconds : 0.0;
}

void print_table(std::FILE* out, const run_config& cfg, const run_result& r) {
  auto row = [out](const char* name, const std::string& value) {
    std::fprintf(out, "%-22s %s\n", name, value.c_str());
  };
  auto num = [](const char* fmt, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, value);
    return std::string{buf};
  };
  bool queue = cfg.kind == scenario_kind::queue;
  row("scenario", cfg.scenario);
  row("pattern", r.pattern);
  row("topics", count(cfg.topics));
  row("publishers", count(cfg.publishers));
  row("rate (msgs/s)", cfg.rate > 0 ? num("%.0f", cfg.rate) : "unlimited");
  row("messages", count(cfg.messages));
  row("size (B)", count(cfg.size));
  row("batch", count(cfg.batch));
  if (queue) {
    row("workers", count(cfg.workers));
    row("max in flight", count(cfg.max_in_flight));
  } else {
    row("subscribers", count(cfg.subscribers));
  }
  row("paced", cfg.paced ? "yes" : "no");
  row("elapsed (s)", num("%.3f", r.elapsed_s));
  row("publish (msgs/s)", num("%.0f", rate(r.sent, r.publish_s)));
  row(queue ? "acked (msgs/s)" : "delivered (msgs/s)",
      num("%.0f", rate(r.received, r.deliver_s)));
  row("sent", count(r.sent));
  row("received", count(r.received));
  if (queue) {
    row("duplicates", count(r.duplicates));
    row("redelivered", count(r.redelivered));
  } else {
    row("dropped", count(r.dropped));
  }
  row("missing", count(r.missing));
  row("publish errors", count(r.publish_errors));
  row("out of order", count(r.out_of_order));
  row("latency from", cfg.rate > 0 ? "scheduled send time" : "send time");
  row("latency p50 (us)", num("%.1f", r.latency.p50_us));
  row("latency p99 (us)", num("%.1f", r.latency.p99_us));
  row("latency p99.9 (us)", num("%.1f", r.latency.p999_us));
  row("latency max (us)", num("%.1f", r.latency.max_us));
  if (r.broker_cpu_s >= 0)
    row("broker CPU (s)", num("%.3f", r.broker_cpu_s));
  row("load generator CPU (s)", num("%.3f", r.bench_cpu_s));
  row("result", r.timed_out ? "timed out" : "finished");
}

void report(const run_config& cfg, const publish_stats& pub,
            const run_times& times, std::vector<int64_t>& latencies,
            run_result& r) {
  r.sent = pub.sent.load();
  r.publish_errors = pub.errors.load();
  r.elapsed_s = seconds_between(times.start, times.end);
  r.publish_s = seconds_between(times.start, times.publish_end);
  r.deliver_s = seconds_between(times.start, times.last_delivery);
  r.latency = summarize_latency(latencies);
  if (cfg.json)
    print_json(stdout, cfg, r);
  else
    print_table(stdout, cfg, r);
  std::fflush(stdout);
}

void print_json(std::FILE* out, const run_config& cfg, const run_result& r) {
  bool queue = cfg.kind == scenario_kind::queue;
  char consumers[96];
  if (queue)
    std::snprintf(consumers, sizeof consumers,
                  "\"workers\":%u,\"max_in_flight\":%u", cfg.workers,
                  cfg.max_in_flight);
  else
    std::snprintf(consumers, sizeof consumers, "\"subscribers\":%u",
                  cfg.subscribers);
  // Fan-out reports what slow subscribers lost, a queue what came twice.
  auto losses = queue ? "\"duplicates\":" + count(r.duplicates) +
                            ",\"redelivered\":" + count(r.redelivered)
                      : "\"dropped\":" + count(r.dropped);
  char cpu_buf[32];
  std::snprintf(cpu_buf, sizeof cpu_buf, "%.6f", r.broker_cpu_s);
  std::string cpu = r.broker_cpu_s >= 0 ? cpu_buf : "null";
  char own_cpu[32];
  std::snprintf(own_cpu, sizeof own_cpu, "%.6f", r.bench_cpu_s);
  std::fprintf(
      out,
      "{\"scenario\":%s,\"server\":%s,\"run_id\":%s,\"messages\":%llu,"
      "\"size\":%zu,\"batch\":%zu,%s,\"paced\":%s,\"elapsed_s\":%.6f,"
      "\"publish_s\":%.6f,\"deliver_s\":%.6f,\"publish_msgs_per_s\":%.1f,"
      "\"%s_msgs_per_s\":%.1f,\"sent\":%llu,\"received\":%llu,"
      "%s,\"missing\":%llu,\"publish_errors\":%llu,"
      "\"out_of_order\":%llu,\"latency_us\":{\"samples\":%llu,\"p50\":%.1f,"
      "\"p99\":%.1f,\"p99_9\":%.1f,\"max\":%.1f},\"latency_from\":%s,"
      "\"publishers\":%u,\"rate\":%.1f,\"topics\":%u,\"pattern\":%s,"
      "\"broker_cpu_s\":%s,\"bench_cpu_s\":%s,\"timed_out\":%s}\n",
      json_string(cfg.scenario).c_str(), json_string(cfg.server).c_str(),
      json_string(r.run_id).c_str(),
      static_cast<unsigned long long>(cfg.messages), cfg.size, cfg.batch,
      consumers, cfg.paced ? "true" : "false", r.elapsed_s, r.publish_s,
      r.deliver_s, rate(r.sent, r.publish_s), queue ? "acked" : "delivered",
      rate(r.received, r.deliver_s), static_cast<unsigned long long>(r.sent),
      static_cast<unsigned long long>(r.received), losses.c_str(),
      static_cast<unsigned long long>(r.missing),
      static_cast<unsigned long long>(r.publish_errors),
      static_cast<unsigned long long>(r.out_of_order),
      static_cast<unsigned long long>(r.latency.samples), r.latency.p50_us,
      r.latency.p99_us, r.latency.p999_us, r.latency.max_us,
      cfg.rate > 0 ? "\"scheduled\"" : "\"sent\"", cfg.publishers, cfg.rate,
      cfg.topics, json_string(r.pattern).c_str(), cpu.c_str(), own_cpu,
      r.timed_out ? "true" : "false");
}

} // namespace tb::bench
