#include "tools/soak/soak_coordinator.hpp"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <thread>

#include <unistd.h>

#include "client/connection.hpp"
#include "tools/soak/soak.hpp"
#include "tools/soak/soak_process.hpp"

namespace tb::soak {

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// How often the coordinator looks at its children and the broker's RSS.
constexpr auto tick = 50ms;

// How often RSS is sampled.
constexpr auto sample_every = 1s;

// Seconds between two time points.
double seconds(clock_type::time_point from, clock_type::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Returns the counters of group `name`, or nothing.
std::optional<pb::GroupCounters> counters_of(client::connection& conn,
                                             const std::string& name) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  pb::ListGroupsReply reply;
  if (!conn.stub().ListGroups(&ctx, pb::ListGroupsRequest{}, &reply).ok())
    return std::nullopt;
  for (auto& group : reply.groups())
    if (group.name() == name)
      return group.counters();
  return std::nullopt;
}

// Counts the lines of `path`.
uint64_t line_count(const std::string& path) {
  std::ifstream in{path};
  std::string line;
  uint64_t n = 0;
  while (std::getline(in, line))
    ++n;
  return n;
}

// The state of one run.
class run {
public:
  run(const soak_config& cfg, soak_report& report)
      : cfg_(cfg), report_(report), self_(self_path()),
        rng_(cfg.seed != 0 ? cfg.seed : std::random_device{}()) {
    // nop
  }

  int operator()();

private:
  // Starts this program in `role` with `args`; its output goes to
  // `<name>.out` and its records to `<name>.log`.
  std::unique_ptr<child> spawn(const std::string& role, const std::string& name,
                               std::vector<std::string> args) {
    std::vector<std::string> all{role, "--server", server_, "--log",
                                 dir_ + "/" + name + ".log"};
    all.insert(all.end(), args.begin(), args.end());
    return std::make_unique<child>(self_, all, dir_ + "/" + name + ".out");
  }

  // Starts worker `slot` (its next generation).
  void start_worker(std::size_t slot) {
    auto name = "worker-" + std::to_string(slot) + "-" +
                std::to_string(generation_[slot]++);
    worker_logs_.push_back(dir_ + "/" + name + ".log");
    workers_[slot] =
        spawn("worker", name,
              {"--group", group_, "--pattern", pattern_, "--reject-every",
               std::to_string(cfg_.reject_every)});
  }

  bool start_broker();
  bool start_roles();
  void load_phase();
  void drain();
  void stop_roles();
  void check();
  void stop_broker();

  void fail(std::string sentence) {
    report_.failures.push_back(std::move(sentence));
  }

  const soak_config& cfg_;
  soak_report& report_;
  std::string self_;
  std::mt19937_64 rng_;
  std::string dir_, server_, group_, pattern_;
  int broker_pid_ = 0;
  std::unique_ptr<child> broker_;
  std::unique_ptr<client::connection> conn_;
  std::unique_ptr<child> dead_letters_;
  std::vector<std::unique_ptr<child>> subscribers_, publishers_, workers_;
  std::vector<unsigned> generation_;
  std::vector<std::string> worker_logs_;
  ledger ledger_;
};

bool run::start_broker() {
  if (!cfg_.server.empty()) {
    server_ = cfg_.server;
    broker_pid_ = cfg_.broker_pid;
    return true;
  }
  auto out = dir_ + "/broker.out";
  broker_ = std::make_unique<child>(
      cfg_.broker_binary,
      // No metrics listener: soaks and tests may run side by side.
      std::vector<std::string>{"--listen", "127.0.0.1:0", "--metrics-listen",
                               "off"},
      out);
  auto rest = wait_for_text(out, "listening on ", 20s);
  if (!rest) {
    std::fprintf(stderr, "tinybroker-soak: the broker did not start (%s)\n",
                 out.c_str());
    return false;
  }
  server_ = rest->substr(0, rest->find(' '));
  broker_pid_ = broker_->pid();
  return true;
}

bool run::start_roles() {
  pb::CreateGroupRequest request;
  request.set_name(group_);
  request.mutable_settings()->set_pattern(pattern_);
  request.mutable_settings()->set_ack_wait_ms(5000);
  request.mutable_settings()->set_max_deliveries(20);
  pb::GroupInfo info;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  auto status = conn_->stub().CreateGroup(&ctx, request, &info);
  if (!status.ok()) {
    std::fprintf(stderr, "tinybroker-soak: CreateGroup failed: %s\n",
                 status.error_message().c_str());
    return false;
  }
  std::vector<std::string> ready;
  auto ready_arg = [&](const std::string& name) {
    ready.push_back(dir_ + "/" + name + ".ready");
    return ready.back();
  };
  dead_letters_ = spawn(
      "dead-letters", "dead-letters",
      {"--pattern", "$dlq." + group_, "--ready", ready_arg("dead-letters")});
  for (unsigned i = 0; i < cfg_.subscribers; ++i) {
    auto name = "subscriber-" + std::to_string(i);
    subscribers_.push_back(
        spawn("subscriber", name,
              {"--pattern", pattern_, "--ready", ready_arg(name)}));
  }
  workers_.resize(cfg_.workers);
  generation_.assign(cfg_.workers, 0);
  for (std::size_t i = 0; i < cfg_.workers; ++i)
    start_worker(i);
  for (auto& path : ready)
    if (!wait_for_file(path, 20s)) {
      std::fprintf(stderr, "tinybroker-soak: %s did not subscribe\n",
                   path.c_str());
      return false;
    }
  return true;
}

void run::load_phase() {
  auto start = clock_type::now();
  auto ms = std::to_string(cfg_.duration.count());
  for (unsigned i = 0; i < cfg_.publishers; ++i)
    publishers_.push_back(spawn("publisher", "publisher-" + std::to_string(i),
                                {"--index", std::to_string(i), "--rate",
                                 std::to_string(cfg_.rate), "--duration-ms", ms,
                                 "--prefix", "soak." + report_.run_id}));
  std::uniform_real_distribution<double> spread{0.25, 1.75};
  auto next_gap = [&] {
    return std::chrono::duration_cast<clock_type::duration>(cfg_.kill_every *
                                                            spread(rng_));
  };
  auto next_kill = start + next_gap();
  auto next_sample = start;
  auto deadline = start + cfg_.duration + 60s;
  for (;;) {
    auto now = clock_type::now();
    bool publishing = false;
    for (auto& p : publishers_)
      publishing = publishing || p->running();
    if (!publishing || now >= deadline)
      break;
    if (now >= next_sample) {
      report_.rss.push_back({seconds(start, now), resident_kib(broker_pid_)});
      next_sample += sample_every;
    }
    if (now >= next_kill && !workers_.empty()) {
      auto slot = std::uniform_int_distribution<std::size_t>{
          0, workers_.size() - 1}(rng_);
      workers_[slot]->stop(SIGKILL, 10s);
      ++report_.kills;
      start_worker(slot);
      next_kill = now + next_gap();
    }
    for (std::size_t i = 0; i < workers_.size(); ++i)
      if (!workers_[i]->running()) {
        ++report_.worker_exits;
        start_worker(i);
      }
    std::this_thread::sleep_for(tick);
  }
  report_.load_seconds = seconds(start, clock_type::now());
  for (std::size_t i = 0; i < publishers_.size(); ++i) {
    auto code = publishers_[i]->stop(SIGTERM, 15s);
    if (code != 0)
      fail("publisher " + std::to_string(i) + " exited with " +
           (code ? std::to_string(*code) : "a hang"));
  }
}

void run::drain() {
  for (unsigned i = 0; i < cfg_.publishers; ++i)
    ledger_.read_publisher_log(dir_ + "/publisher-" + std::to_string(i) +
                               ".log");
  auto published = ledger_.check().published;
  auto deadline = clock_type::now() + cfg_.drain_timeout;
  std::optional<pb::GroupCounters> c;
  while (clock_type::now() < deadline) {
    c = counters_of(*conn_, group_);
    if (c && c->pending() == 0 && c->in_flight() == 0 &&
        c->received() >= published &&
        line_count(dir_ + "/dead-letters.log") >= c->dead_lettered()) {
      report_.drained = true;
      break;
    }
    for (std::size_t i = 0; i < workers_.size(); ++i)
      if (!workers_[i]->running()) {
        ++report_.worker_exits;
        start_worker(i);
      }
    std::this_thread::sleep_for(100ms);
  }
  if (!report_.drained)
    fail("the group did not drain within " +
         std::to_string(cfg_.drain_timeout.count()) + " ms");
  if (c) {
    report_.broker_received = c->received();
    report_.broker_acked = c->acked();
    report_.broker_dead_lettered = c->dead_lettered();
    report_.broker_redelivered = c->redelivered();
    report_.broker_pending = c->pending();
    report_.broker_in_flight = c->in_flight();
  }
}

void run::stop_roles() {
  for (std::size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i]->stop(SIGTERM, 10s) != 0)
      fail("worker " + std::to_string(i) + " did not stop cleanly");
  std::vector<child*> subs{dead_letters_.get()};
  for (auto& s : subscribers_)
    subs.push_back(s.get());
  for (auto* s : subs)
    if (s->stop(SIGTERM, 10s) != 0)
      fail("a subscriber's stream ended early or it did not stop cleanly");
}

void run::check() {
  for (auto& path : worker_logs_)
    ledger_.read_worker_log(path);
  ledger_.read_dead_letter_log(dir_ + "/dead-letters.log");
  report_.group = ledger_.check();
  auto& g = report_.group;
  if (g.lost > 0)
    fail(std::to_string(g.lost) + " messages were lost");
  if (g.duplicates > 0)
    fail(std::to_string(g.duplicates) +
         " messages were delivered twice with the same attempt number");
  if (g.rejected_not_dead_lettered > 0)
    fail(std::to_string(g.rejected_not_dead_lettered) +
         " rejected messages did not reach the dead letter topic");
  if (g.unknown > 0)
    fail(std::to_string(g.unknown) + " delivered keys were never published");
  if (report_.broker_received != g.published ||
      report_.broker_acked != g.acked ||
      report_.broker_dead_lettered != g.dead_lettered)
    fail("the broker's group counters (received, acked, dead-lettered) "
         "differ from the logs");
  for (unsigned i = 0; i < cfg_.subscribers; ++i) {
    std::ifstream in{dir_ + "/subscriber-" + std::to_string(i) + ".log"};
    std::string word;
    uint64_t received = 0, dropped = 0, out_of_order = 0;
    in >> word >> received >> word >> dropped >> word >> out_of_order;
    report_.fanout_received += received;
    report_.fanout_dropped += dropped;
    report_.fanout_out_of_order += out_of_order;
    if (received + dropped != g.published)
      ++report_.fanout_incomplete;
  }
  if (report_.worker_exits > 0)
    fail(std::to_string(report_.worker_exits) +
         " workers exited without being killed (a stream ended early)");
  if (report_.fanout_out_of_order > 0)
    fail("fan-out subscribers saw messages out of publish order");
  if (report_.fanout_incomplete > 0)
    fail("fan-out subscribers' received + dropped differ from published");
  report_.rss_result =
      judge_rss(report_.rss, cfg_.rss_margin_pct, cfg_.rss_margin_mib);
  if (!report_.rss_result.flat)
    fail("the broker's RSS grew beyond the allowed margin");
}

void run::stop_broker() {
  if (!broker_) {
    // A broker we were given: leave it as we found it.
    pb::DeleteGroupRequest request;
    request.set_name(group_);
    pb::DeleteGroupReply reply;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    conn_->stub().DeleteGroup(&ctx, request, &reply);
    return;
  }
  auto start = clock_type::now();
  auto code = broker_->stop(SIGTERM, 30s);
  report_.broker_stop_seconds = seconds(start, clock_type::now());
  report_.broker_exit = code.value_or(-1);
  if (code != 0)
    fail("the broker did not exit 0 on SIGTERM");
}

int run::operator()() {
  auto start = clock_type::now();
  dir_ = cfg_.work_dir;
  if (dir_.empty()) {
    std::string tmpl = "/tmp/tinybroker-soak-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr)
      return exit_usage;
    dir_ = tmpl;
  }
  report_.work_dir = dir_;
  report_.run_id = std::to_string(rng_() % 1000000);
  group_ = "soak-" + report_.run_id;
  pattern_ = "soak." + report_.run_id + ".>";
  if (!start_broker())
    return exit_usage;
  if (!is_loopback(server_)) {
    std::fprintf(stderr, "tinybroker-soak: %s is not a loopback address\n",
                 server_.c_str());
    return exit_usage;
  }
  conn_ = std::make_unique<client::connection>(server_,
                                               client::security_from_env());
  if (!conn_->wait_connected(20s) || !start_roles())
    return exit_usage;
  load_phase();
  drain();
  stop_roles();
  check();
  stop_broker();
  report_.total_seconds = seconds(start, clock_type::now());
  if (!report_.failures.empty())
    return exit_failed;
  if (cfg_.work_dir.empty() && !cfg_.keep_logs) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    report_.work_dir += " (removed)";
  }
  return exit_ok;
}

} // namespace

int run_soak(const soak_config& cfg, soak_report& report) {
  return run{cfg, report}();
}

} // namespace tb::soak
