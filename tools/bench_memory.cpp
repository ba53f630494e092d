// Memory scenarios of tinybroker-bench, which read the broker's resident
// memory (VmRSS of /proc/PID/status; the broker must run on this host):
// `idle` opens S sessions that each hold one fan-out subscription (on one
// shared connection, or each on its own) and reports the growth per session;
// `held` publishes N messages to a fresh group without members and reports the
// growth per held message. Also the group calls the queue scenario uses.

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/connection.hpp"
#include "tools/bench_report.hpp"

namespace tb::bench {

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

// Returns the subscriptions acknowledged on `sessions`, waiting up to 10 s
// for each.
unsigned await_subscribed(std::vector<std::unique_ptr<client::session>>& all) {
  unsigned confirmed = 0;
  for (auto& session : all) {
    std::vector<pb::ServerFrame> skipped;
    if (session->wait_for(pb::ServerFrame::kSubscribed, 10s, &skipped))
      ++confirmed;
    for (auto& frame : skipped)
      if (frame.has_error())
        errorf("FAILED_PRECONDITION", "subscribe refused: %s",
               frame.error().error().message().c_str());
  }
  return confirmed;
}

// Returns the pending messages of group `name`, or nothing if the call
// fails or the group is unknown.
std::optional<uint64_t> pending_of(client::connection& conn,
                                   const std::string& name) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  pb::ListGroupsReply reply;
  if (!conn.stub().ListGroups(&ctx, pb::ListGroupsRequest{}, &reply).ok())
    return std::nullopt;
  for (auto& group : reply.groups())
    if (group.name() == name)
      return group.counters().pending();
  return std::nullopt;
}

// Returns the growth from `before` to `after` (KiB) per one of `count`.
double growth_per(long long before, long long after, uint64_t count) {
  return count > 0 ? static_cast<double>(after - before) * 1024.0 /
                         static_cast<double>(count)
                   : 0.0;
}

// Prints the memory reading for `count` things of `what`; `at_once` is the
// reading taken before the --settle wait, if there was one (else -1).
void print_memory(const run_config& cfg, const char* what, uint64_t asked,
                  uint64_t count, double elapsed, long long before,
                  long long after, double extra_json_bytes,
                  long long at_once = -1) {
  auto per = growth_per(before, after, count);
  auto per_at_once = growth_per(before, at_once, count);
  if (cfg.json) {
    std::string settle;
    if (at_once >= 0)
      settle = ",\"settle_s\":" + std::to_string(cfg.settle_seconds) +
               ",\"rss_at_once_kib\":" + std::to_string(at_once) +
               ",\"bytes_per_" + what +
               "_at_once\":" + std::to_string(std::llround(per_at_once));
    std::printf("{\"scenario\":%s,\"server\":%s,\"%ss\":%llu,"
                "\"measured\":%llu,\"elapsed_s\":%.6f,"
                "\"rss_before_kib\":%lld,\"rss_after_kib\":%lld,"
                "\"bytes_per_%s\":%.0f,\"bytes_beyond_content\":%.0f%s}\n",
                json_string(cfg.scenario).c_str(),
                json_string(cfg.server).c_str(), what,
                static_cast<unsigned long long>(asked),
                static_cast<unsigned long long>(count), elapsed, before, after,
                what, per, per - extra_json_bytes, settle.c_str());
    return;
  }
  std::printf("%-24s %s\n", "scenario", cfg.scenario.c_str());
  std::printf("%-24s %llu\n", (std::string{what} + "s").c_str(),
              static_cast<unsigned long long>(asked));
  std::printf("%-24s %llu\n", "measured",
              static_cast<unsigned long long>(count));
  std::printf("%-24s %.3f\n", "elapsed (s)", elapsed);
  std::printf("%-24s %lld\n", "broker RSS before (KiB)", before);
  std::printf("%-24s %lld\n", "broker RSS after (KiB)", after);
  std::printf("%-24s %.0f\n", ("bytes per " + std::string{what}).c_str(), per);
  std::printf("%-24s %.0f\n", "bytes beyond content", per - extra_json_bytes);
  if (at_once >= 0) {
    std::printf("%-24s %lld\n", "broker RSS at once (KiB)", at_once);
    std::printf("%-24s %.0f\n",
                ("bytes per " + std::string{what} + " at once").c_str(),
                per_at_once);
  }
}

// Returns the broker's memory, or -1 after saying why it cannot be read.
long long broker_memory(const run_config& cfg) {
  auto kib = resident_kib(cfg.broker_pid);
  if (kib < 0)
    errorf("INVALID_ARGUMENT",
           "cannot read the memory of process %d "
           "(--broker-pid must name a broker on this host)",
           cfg.broker_pid);
  return kib;
}

} // namespace

bool create_group(client::connection& conn, const run_config& cfg,
                  const std::string& name, const std::string& pattern) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  pb::CreateGroupRequest req;
  req.set_name(name);
  auto* settings = req.mutable_settings();
  settings->set_pattern(pattern);
  settings->set_max_pending_messages(cfg.messages);
  settings->set_max_pending_bytes(cfg.messages * cfg.size);
  pb::GroupInfo reply;
  auto status = conn.stub().CreateGroup(&ctx, req, &reply);
  if (!status.ok())
    errorf("UNAVAILABLE", "CreateGroup %s: %s", name.c_str(),
           status.error_message().c_str());
  return status.ok();
}

uint64_t delete_group(client::connection& conn, const std::string& name) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  pb::DeleteGroupRequest req;
  req.set_name(name);
  pb::DeleteGroupReply reply;
  auto status = conn.stub().DeleteGroup(&ctx, req, &reply);
  if (!status.ok())
    errorf("UNAVAILABLE", "DeleteGroup %s: %s", name.c_str(),
           status.error_message().c_str());
  return reply.dropped_messages();
}

int run_held(client::connection& conn, const run_config& cfg) {
  auto before = broker_memory(cfg);
  if (before < 0)
    return exit_usage;
  auto run_id = random_run_id();
  auto topics = plan_topics(cfg, run_id);
  auto group = "bench-" + run_id;
  if (!create_group(conn, cfg, group, topics.pattern))
    return exit_usage;
  auto publishers = open_publishers(publish_connection(conn, cfg), cfg);
  publish_stats pub;
  auto start = now_ns();
  auto deadline = start + static_cast<int64_t>(cfg.max_seconds * 1e9);
  bool published = run_publishers(
      publishers, cfg, topics, start, deadline, [] { return 0; }, pub);
  // Confirmed means routed; poll until the group holds every message.
  auto held = pending_of(conn, group).value_or(0);
  while (published && held < cfg.messages && now_ns() < deadline) {
    std::this_thread::sleep_for(10ms);
    held = pending_of(conn, group).value_or(0);
  }
  auto after = broker_memory(cfg);
  auto content = static_cast<double>(cfg.size + topics.names[0].size());
  print_memory(cfg, "message", cfg.messages, held,
               seconds_between(start, now_ns()), before, after, content);
  std::fflush(stdout);
  for (auto& session : publishers)
    session->close(2s);
  delete_group(conn, group);
  if (pub.broken)
    return exit_usage;
  return held == cfg.messages && pub.errors.load() == 0 ? exit_ok : exit_lost;
}

int run_idle(client::connection& conn, const run_config& cfg,
             const client::security_options& security) {
  auto before = broker_memory(cfg);
  if (before < 0)
    return exit_usage;
  auto run_id = random_run_id();
  // With own connections, a local subchannel pool keeps gRPC from sharing
  // one TCP connection between channels of the same target and settings.
  std::vector<std::unique_ptr<client::connection>> own;
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::vector<std::unique_ptr<client::session>> sessions;
  sessions.reserve(cfg.sessions);
  auto start = now_ns();
  for (unsigned i = 0; i < cfg.sessions; ++i) {
    if (cfg.own_connections) {
      own.push_back(std::make_unique<client::connection>(
          client::make_channel(cfg.server, security, args)));
      sessions.push_back(own.back()->open_session());
    } else {
      sessions.push_back(conn.open_session());
    }
    sessions.back()->subscribe(
        1, "bench." + run_id + ".idle." + std::to_string(i), "", 1);
  }
  auto confirmed = await_subscribed(sessions);
  auto elapsed = seconds_between(start, now_ns());
  auto after = broker_memory(cfg);
  long long at_once = -1;
  if (cfg.settle_seconds > 0) {
    // Garbage of the start-up that the allocator gives back over its decay
    // time is not what an idle session costs; the second reading tells.
    at_once = after;
    std::this_thread::sleep_for(
        std::chrono::duration<double>(cfg.settle_seconds));
    after = broker_memory(cfg);
  }
  print_memory(cfg, "session", cfg.sessions, confirmed, elapsed, before, after,
               0, at_once);
  std::fflush(stdout);
  for (auto& session : sessions)
    session->close(2s);
  sessions.clear(); // before their connections
  return confirmed == cfg.sessions ? exit_ok : exit_lost;
}

} // namespace tb::bench
