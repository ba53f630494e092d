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
#include "tools/soak/soak_cluster.hpp"
#include "tools/soak/soak_process.hpp"
#include "tools/soak/soak_run.hpp"

namespace tb::soak {

namespace detail {

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

bool run::start_broker() {
  if (!cfg_.server.empty()) {
    server_ = cfg_.server;
    broker_pid_ = cfg_.broker_pid;
    return true;
  }
  if (cfg_.nodes > 1) {
    cluster_ =
        std::make_unique<soak_cluster>(cfg_.broker_binary, dir_, cfg_.nodes);
    if (!cluster_->start_all())
      return false;
    server_ = cluster_->address(0);
    broker_pid_ = cluster_->pid(0);
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
  if (cfg_.replicas > 0) {
    // GroupSettings.replicas (issue 32), set by name: this tool builds
    // before the protocol has it.
    auto* settings = request.mutable_settings();
    auto* field = settings->GetDescriptor()->FindFieldByName("replicas");
    if (field == nullptr) {
      std::fprintf(stderr, "tinybroker-soak: --replicas: this build's "
                           "protocol has no GroupSettings.replicas\n");
      return false;
    }
    settings->GetReflection()->SetUInt32(settings, field, cfg_.replicas);
  }
  pb::GroupInfo info;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  auto status = conn_->stub().CreateGroup(&ctx, request, &info);
  if (!status.ok()) {
    std::fprintf(stderr, "tinybroker-soak: CreateGroup failed: %s\n",
                 status.error_message().c_str());
    return false;
  }
  if (cluster_ && cfg_.replicas > 0) {
    // Its replica is placed once it exists: wait for it (bounded).
    auto until = clock_type::now() + 10s;
    while (info.replica_node().empty() && clock_type::now() < until) {
      std::this_thread::sleep_for(100ms);
      grpc::ClientContext list_ctx;
      list_ctx.set_deadline(std::chrono::system_clock::now() + 5s);
      pb::ListGroupsReply groups;
      if (conn_->stub().ListGroups(&list_ctx, {}, &groups).ok())
        for (auto& group : groups.groups())
          if (group.name() == group_)
            info = group;
    }
  }
  if (cluster_ && !place_roles(info))
    return false;
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
    // With a cluster, every other subscriber sits on the group's node: the
    // messages cross to it.
    subscribers_.push_back(spawn(
        "subscriber", name, {"--pattern", pattern_, "--ready", ready_arg(name)},
        cluster_ && i % 2 == 1 && cfg_.replicas == 0 ? cluster_->address(owner_)
                                                     : server_));
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
  auto next_node_kill =
      start + std::chrono::duration_cast<clock_type::duration>(
                  cfg_.node_kill_every * spread(rng_));
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
    if (cluster_ && now >= next_node_kill) {
      if (!kill_victim())
        break;
      next_node_kill =
          clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                  cfg_.node_kill_every * spread(rng_));
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
  // After an owner kill the promoted group counts from 0: drained is then
  // nothing pending or in flight for a whole second.
  bool was_idle = false;
  auto idle_since = clock_type::now();
  while (clock_type::now() < deadline) {
    c = counters_of(*conn_, group_);
    bool idle = c && c->pending() == 0 && c->in_flight() == 0 &&
                line_count(dir_ + "/dead-letters.log") >= c->dead_lettered();
    if (idle && !was_idle)
      idle_since = clock_type::now();
    was_idle = idle;
    if (idle && report_.owner_kills > 0)
      idle = clock_type::now() - idle_since >= 1s;
    if (idle && (report_.owner_kills > 0 || c->received() >= published)) {
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

} // namespace detail

int run_soak(const soak_config& cfg, soak_report& report) {
  return detail::run{cfg, report}();
}

} // namespace tb::soak
