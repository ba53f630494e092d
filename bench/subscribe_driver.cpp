// Measures the broker's cost per subscribe from a client (issue 15.3).
//
// Runs one scenario against a running broker and reports the wall time and
// the broker's CPU time (from /proc/PID/stat) per subscribe, overall and for
// each fifth of the run, so growth with the number of existing
// subscriptions shows:
//
//   literal  one session subscribes --count times, each to its own literal
//            pattern `nomatch.<i>.x` that matches no topic.
//   patterns as literal, with wildcard patterns `nomatch.<i>.*` (each a new
//            pattern in the router's trie; NATS's peer:
//            scripts/nats_subscribe_cost.py --wildcard).
//   onetopic a publisher publishes once to `live.topic` (so it caches its
//            route), then one session subscribes --count times to it.
//   wildcard a publisher publishes once to each of `x.0` .. `x.<topics-1>`,
//            then a second session subscribes `x.>` --count times in turn
//            (each one waits for its Subscribed), under new ids.
//
//   subscribe_driver --server 127.0.0.1:7400 --broker-pid PID
//       --scenario literal --count 100000 [--window 1000] [--topics 100000]
//       [--batch 1] [--per-frame 0]
//
// --batch B sends B subscribe frames per socket write (gRPC's buffer hint),
// as a client that batches its requests would (NATS clients do).
// --per-frame N puts N subscriptions in each frame (a SubscribeBatch; 0, the
// default, sends one Subscribe frame per subscription).
//
// The broker needs limits.max_subscriptions_per_session >= --count. Prints
// one human line per fifth, then a JSON line.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "client/connection.hpp"
#include "client/session.hpp"

namespace {

namespace pb = tinybroker::v1;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

// The settings of one run.
struct options {
  std::string server = "127.0.0.1:7400";
  long broker_pid = 0;
  std::string scenario = "literal";
  size_t count = 10000;
  size_t window = 1000;
  size_t topics = 100000;
  size_t batch = 1;
  size_t per_frame = 0;
};

// Returns the user + system CPU seconds of process `pid` so far.
double cpu_seconds(long pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string text{std::istreambuf_iterator<char>{in}, {}};
  auto close = text.rfind(')');
  if (close == std::string::npos)
    return 0;
  std::istringstream fields{text.substr(close + 2)};
  std::string field;
  // Fields 3.. follow the command name; utime and stime are 14 and 15.
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14)
      utime = std::stoull(field);
    if (i == 15)
      stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A point in the run: subscribes done, wall clock, broker CPU.
struct mark {
  size_t done;
  clock_type::time_point at;
  double cpu;
};

// Exits with `what` unless `ok`.
void require(bool ok, const std::string& what) {
  if (ok)
    return;
  std::cerr << "subscribe_driver: " << what << "\n";
  std::exit(1);
}

// Publishes one message to each topic in `names`, 1000 per frame, and
// waits for each frame's confirm.
void publish_once(tb::client::session& s,
                  const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); i += 1000) {
    std::vector<tb::client::outgoing_message> batch;
    for (size_t j = i; j < names.size() && j < i + 1000; ++j)
      batch.push_back({names[j], "x", {}, {}});
    require(s.publish(batch, true, i + 1), "publish failed");
    auto f = s.wait_for(pb::ServerFrame::kPublishConfirm, 60s);
    require(f.has_value(), "no publish confirm");
  }
}

// Subscribes ids `first` .. `first + n - 1` on `s`, the pattern of each
// from `pattern_of`, keeping at most `window` unanswered; records a mark
// at every fifth.
template <class PatternOf>
void subscribe_all(tb::client::session& s, const options& opt, uint64_t first,
                   size_t n, size_t window, PatternOf pattern_of,
                   std::vector<mark>& marks) {
  size_t sent = 0;
  size_t done = 0;
  size_t next_mark = n / 5;
  auto per_frame = std::max<size_t>(opt.per_frame, 1);
  while (done < n) {
    while (sent < n && sent - done < window) {
      pb::ClientFrame frame;
      frame.set_request_id(first + sent);
      auto take = std::min(n - sent, opt.per_frame == 0 ? 1 : per_frame);
      for (size_t k = 0; k < take; ++k) {
        auto* sub = opt.per_frame == 0
                        ? frame.mutable_subscribe()
                        : frame.mutable_subscribe_batch()->add_subscriptions();
        sub->set_subscription_id(first + sent + k);
        sub->set_pattern(pattern_of(sent + k));
      }
      // Every --batch frames (and the last of a burst) go out on the wire;
      // the ones before wait in gRPC's buffer.
      grpc::WriteOptions options;
      auto frame_no = sent / per_frame + 1;
      auto last = sent + take == n || sent + take - done >= window;
      if (!last && frame_no % opt.batch != 0)
        options.set_buffer_hint();
      require(s.send(frame, options), "subscribe send failed");
      sent += take;
    }
    auto f = s.next(120s);
    require(f.has_value(), "no answer to a subscribe");
    if (f->has_error())
      require(false, "subscribe refused: " + f->error().error().message());
    if (f->has_subscribed())
      ++done;
    else if (f->has_subscribed_batch())
      done +=
          static_cast<size_t>(f->subscribed_batch().subscription_ids_size());
    else
      continue;
    if (done >= next_mark || done == n) {
      marks.push_back({done, clock_type::now(), cpu_seconds(opt.broker_pid)});
      while (next_mark <= done)
        next_mark += n / 5;
    }
  }
}

// Prints per-fifth and overall figures, human and JSON.
void report(const options& opt, const std::vector<mark>& marks) {
  std::ostringstream json;
  json << "{\"scenario\":\"" << opt.scenario << "\",\"count\":" << opt.count
       << ",\"topics\":" << opt.topics << ",\"slices\":[";
  for (size_t i = 1; i < marks.size(); ++i) {
    auto n = static_cast<double>(marks[i].done - marks[i - 1].done);
    auto wall = std::chrono::duration<double>(marks[i].at - marks[i - 1].at);
    auto cpu_us = (marks[i].cpu - marks[i - 1].cpu) * 1e6 / n;
    auto wall_us = wall.count() * 1e6 / n;
    std::printf("subs %7zu..%-7zu wall %9.1f us/sub  broker cpu %9.1f us/sub\n",
                marks[i - 1].done, marks[i].done, wall_us, cpu_us);
    json << (i > 1 ? "," : "") << "{\"upto\":" << marks[i].done
         << ",\"wall_us\":" << wall_us << ",\"cpu_us\":" << cpu_us << "}";
  }
  auto total = static_cast<double>(marks.back().done - marks.front().done);
  auto wall = std::chrono::duration<double>(marks.back().at - marks.front().at);
  auto cpu = marks.back().cpu - marks.front().cpu;
  std::printf("total %zu subscribes: wall %.3f s (%.1f us/sub), broker cpu "
              "%.3f s (%.1f us/sub)\n",
              static_cast<size_t>(total), wall.count(),
              wall.count() * 1e6 / total, cpu, cpu * 1e6 / total);
  json << "],\"wall_s\":" << wall.count()
       << ",\"cpu_us_per_sub\":" << cpu * 1e6 / total
       << ",\"wall_us_per_sub\":" << wall.count() * 1e6 / total << "}";
  std::cout << json.str() << std::endl;
}

options parse(int argc, char** argv) {
  options opt;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    std::string value = argv[i + 1];
    if (key == "--server")
      opt.server = value;
    else if (key == "--broker-pid")
      opt.broker_pid = std::stol(value);
    else if (key == "--scenario")
      opt.scenario = value;
    else if (key == "--count")
      opt.count = std::stoul(value);
    else if (key == "--window")
      opt.window = std::stoul(value);
    else if (key == "--topics")
      opt.topics = std::stoul(value);
    else if (key == "--batch")
      opt.batch = std::max<size_t>(std::stoul(value), 1);
    else if (key == "--per-frame")
      opt.per_frame = std::stoul(value);
    else
      require(false, "unknown option " + key);
  }
  require(opt.broker_pid > 0, "--broker-pid is required");
  require(opt.count >= 5, "--count must be at least 5");
  return opt;
}

} // namespace

int main(int argc, char** argv) {
  auto opt = parse(argc, argv);
  tb::client::connection conn{opt.server};
  require(conn.wait_connected(10s), "cannot connect to " + opt.server);
  auto sub = conn.open_session();
  std::unique_ptr<tb::client::session> pub;
  std::vector<mark> marks;
  if (opt.scenario == "literal") {
    marks.push_back({0, clock_type::now(), cpu_seconds(opt.broker_pid)});
    subscribe_all(
        *sub, opt, 1, opt.count, opt.window,
        [](size_t i) { return "nomatch." + std::to_string(i) + ".x"; }, marks);
  } else if (opt.scenario == "patterns") {
    marks.push_back({0, clock_type::now(), cpu_seconds(opt.broker_pid)});
    subscribe_all(
        *sub, opt, 1, opt.count, opt.window,
        [](size_t i) { return "nomatch." + std::to_string(i) + ".*"; }, marks);
  } else if (opt.scenario == "onetopic") {
    pub = conn.open_session();
    publish_once(*pub, {"live.topic"});
    marks.push_back({0, clock_type::now(), cpu_seconds(opt.broker_pid)});
    subscribe_all(
        *sub, opt, 1, opt.count, opt.window,
        [](size_t) { return std::string{"live.topic"}; }, marks);
  } else if (opt.scenario == "wildcard") {
    pub = conn.open_session();
    std::vector<std::string> names;
    for (size_t i = 0; i < opt.topics; ++i)
      names.push_back("x." + std::to_string(i));
    publish_once(*pub, names);
    std::this_thread::sleep_for(1s); // let the broker settle
    marks.push_back({0, clock_type::now(), cpu_seconds(opt.broker_pid)});
    // One at a time: the cost of each is what a client waits for.
    subscribe_all(
        *sub, opt, 1, opt.count, 1, [](size_t) { return std::string{"x.>"}; },
        marks);
  } else {
    require(false, "unknown scenario " + opt.scenario);
  }
  report(opt, marks);
  sub->cancel();
  if (pub)
    pub->cancel();
  return 0;
}
