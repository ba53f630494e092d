// Routing scenarios of tinybroker-bench (issue 15): `topics-new` publishes
// once to each of N new topics; `subscribe-rate` makes N pipelined
// subscribes to distinct literal patterns; `subscribe-one-topic` makes N
// subscribes to one topic a publisher caches, comparing the first and last
// 10%; `subscribe-wildcard` times one `>` subscribe over N live topics.

#include "tools/bench_routing.hpp"

#include <algorithm>
#include <cstdio>

namespace tb::bench {

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

// Returns `value` with `decimals` digits after the point.
std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

// Adds the rows of a subscribe run and prints them; returns the exit code.
int finish_subscribes(result_rows& rows, const run_config& cfg,
                      const subscribe_log& log, double cpu_s) {
  auto n = log.answered_ns.size();
  auto tenth = std::max<std::size_t>(1, n / 10);
  auto end = n > 0 ? log.answered_ns.back() : log.start_ns;
  auto elapsed = seconds_between(log.start_ns, end);
  auto first = n > 0 ? us_per_answer(log, 0, tenth) : 0;
  auto last = n > 0 ? us_per_answer(log, n - tenth, n) : 0;
  rows.count("subscribes", "subscribes", cfg.subscribes);
  rows.count("in flight", "in_flight", cfg.in_flight);
  rows.count("per frame", "per_frame", cfg.per_frame);
  rows.count("confirmed", "confirmed", n - log.refused);
  rows.count("refused", "refused", log.refused);
  rows.number("elapsed (s)", "elapsed_s", elapsed, 3);
  rows.number("subscribes/s", "subscribes_per_s", rate(n, elapsed), 0);
  rows.number("first 10% (us each)", "first_10pct_us", first, 2);
  rows.number("last 10% (us each)", "last_10pct_us", last, 2);
  rows.number("last / first", "growth", first > 0 ? last / first : 0, 2);
  rows.cpu(cpu_s, n, "subscribe");
  rows.raw("timed out", "timed_out", log.timed_out ? "true" : "false");
  rows.print();
  if (log.ended)
    return exit_usage;
  return log.refused == 0 && !log.timed_out ? exit_ok : exit_lost;
}

} // namespace

// -- shared pieces -----------------------------------------------------------

result_rows::result_rows(const run_config& cfg) : json_(cfg.json) {
  text("scenario", "scenario", cfg.scenario);
  text("server", "server", cfg.server);
}

void result_rows::text(const std::string& label, const std::string& key,
                       const std::string& value) {
  rows_.push_back({label, key, value, true});
}

void result_rows::count(const std::string& label, const std::string& key,
                        uint64_t value) {
  rows_.push_back({label, key, std::to_string(value), false});
}

void result_rows::number(const std::string& label, const std::string& key,
                         double value, int decimals) {
  rows_.push_back({label, key, fixed(value, decimals), false});
}

void result_rows::raw(const std::string& label, const std::string& key,
                      const std::string& json) {
  rows_.push_back({label, key, json, false});
}

void result_rows::cpu(double cpu_s, uint64_t units, const char* unit) {
  bool known = cpu_s >= 0;
  raw("broker CPU (s)", "broker_cpu_s", known ? fixed(cpu_s, 3) : "null");
  auto per = known && units > 0 ? cpu_s * 1e6 / static_cast<double>(units) : 0;
  auto label = std::string{"broker CPU per "} + unit + " (us)";
  auto key = std::string{"broker_cpu_us_per_"} + unit;
  rows_.push_back({label, key, known ? fixed(per, 2) : "null", false});
}

void result_rows::print() const {
  if (json_) {
    std::string out = "{";
    for (auto& r : rows_) {
      if (out.size() > 1)
        out += ',';
      out += json_string(r.key) + ':' +
             (r.quoted ? json_string(r.value) : r.value);
    }
    std::printf("%s}\n", out.c_str());
  } else {
    for (auto& r : rows_)
      std::printf("%-30s %s\n", r.label.c_str(), r.value.c_str());
  }
  std::fflush(stdout);
}

topic_plan fresh_topics(const std::string& run_id, const std::string& tag,
                        uint64_t count) {
  topic_plan plan;
  auto prefix = "bench." + run_id + "." + tag + ".";
  plan.names.reserve(count);
  for (uint64_t i = 0; i < count; ++i)
    plan.names.push_back(prefix + std::to_string(i));
  plan.pattern = prefix + ">";
  return plan;
}

std::unique_ptr<client::session>
publish_once(client::connection& conn, const run_config& cfg,
             const topic_plan& topics, int64_t deadline_ns,
             publish_stats& stats, bool& confirmed) {
  auto once = cfg;
  once.messages = topics.names.size();
  once.publishers = 1;
  once.rate = 0;
  once.paced = false;
  std::vector<std::unique_ptr<client::session>> sessions;
  sessions.push_back(conn.open_session());
  confirmed = run_publishers(
      sessions, once, topics, now_ns(), deadline_ns, [] { return 0; }, stats);
  return std::move(sessions.front());
}

subscribe_log
subscribe_all(client::session& session, uint64_t count,
              const std::function<std::string(uint64_t)>& pattern_of,
              uint64_t first_id, const run_config& cfg, int64_t deadline_ns) {
  subscribe_log log;
  log.answered_ns.reserve(count);
  log.start_ns = now_ns();
  uint64_t sent = 0;
  while (log.answered_ns.size() < count) {
    while (sent < count && sent - log.answered_ns.size() < cfg.in_flight) {
      auto take = std::min<uint64_t>(count - sent, cfg.per_frame);
      bool ok = false;
      if (cfg.per_frame <= 1) {
        ok = session.subscribe(first_id + sent, pattern_of(sent), "", sent + 1);
      } else {
        std::vector<client::subscription_request> batch;
        batch.reserve(take);
        for (uint64_t i = sent; i < sent + take; ++i)
          batch.push_back({first_id + i, pattern_of(i)});
        ok = session.subscribe_batch(batch, sent + 1);
      }
      if (!ok) {
        log.ended = true;
        return log;
      }
      sent += take;
    }
    if (now_ns() > deadline_ns) {
      log.timed_out = true;
      return log;
    }
    auto frame = session.next(100ms);
    if (!frame) {
      if (session.ended()) {
        log.ended = true;
        return log;
      }
      continue;
    }
    if (frame->has_subscribed()) {
      log.answered_ns.push_back(now_ns());
    } else if (frame->has_subscribed_batch()) {
      auto at = now_ns();
      auto n = frame->subscribed_batch().subscription_ids_size();
      log.answered_ns.insert(log.answered_ns.end(), static_cast<size_t>(n), at);
    } else if (frame->has_error()) {
      log.answered_ns.push_back(now_ns());
      if (++log.refused == 1)
        errorf("FAILED_PRECONDITION", "subscribe refused: %s",
               frame->error().error().message().c_str());
    }
  }
  return log;
}

double us_per_answer(const subscribe_log& log, std::size_t from,
                     std::size_t to) {
  auto at = [&](std::size_t i) {
    return i == 0 ? log.start_ns : log.answered_ns[i - 1];
  };
  if (to <= from)
    return 0;
  return static_cast<double>(at(to) - at(from)) / 1e3 /
         static_cast<double>(to - from);
}

bool await_answer(client::session& session, client::session::frame_kind kind,
                  int64_t deadline_ns) {
  while (now_ns() < deadline_ns) {
    auto frame = session.next(100ms);
    if (!frame) {
      if (session.ended())
        return false;
      continue;
    }
    if (frame->kind_case() == kind)
      return true;
    if (frame->has_error()) {
      errorf("FAILED_PRECONDITION", "%s refused: %s",
             frame->error().request().c_str(),
             frame->error().error().message().c_str());
      return false;
    }
  }
  return false;
}

std::optional<broker_counts> count_live(client::connection& conn,
                                        const std::string& pattern) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  pb::StatsRequest req;
  req.set_topic_pattern(pattern);
  req.set_limit(1);
  pb::StatsReply reply;
  auto status = conn.stub().Stats(&ctx, req, &reply);
  if (!status.ok()) {
    errorf("UNAVAILABLE", "Stats: %s", status.error_message().c_str());
    return std::nullopt;
  }
  return broker_counts{reply.broker().topics(), reply.topics_matched(),
                       reply.broker().sessions()};
}

int64_t deadline_after(const run_config& cfg, int64_t start_ns) {
  return start_ns + static_cast<int64_t>(cfg.max_seconds * 1e9);
}

// -- scenarios ---------------------------------------------------------------

int run_topics_new(client::connection& conn, const run_config& cfg) {
  auto topics = fresh_topics(random_run_id(), "new", cfg.topics);
  publish_stats pub;
  cpu_meter broker_cpu{cfg.broker_pid};
  auto start = now_ns();
  bool confirmed = false;
  auto publisher = publish_once(conn, cfg, topics, deadline_after(cfg, start),
                                pub, confirmed);
  auto elapsed = seconds_between(start, now_ns());
  auto cpu_s = broker_cpu.used();
  auto live = count_live(conn, topics.pattern);
  result_rows rows{cfg};
  rows.text("pattern", "pattern", topics.pattern);
  rows.count("topics", "topics", cfg.topics);
  rows.count("batch", "batch", cfg.batch);
  rows.number("elapsed (s)", "elapsed_s", elapsed, 3);
  rows.number("topics/s", "topics_per_s", rate(pub.sent, elapsed), 0);
  rows.count("sent", "sent", pub.sent);
  rows.count("publish errors", "publish_errors", pub.errors);
  rows.raw("live topics of the run", "live_topics",
           live ? std::to_string(live->matched) : "null");
  rows.cpu(cpu_s, pub.sent, "topic");
  rows.raw("timed out", "timed_out",
           confirmed || pub.broken ? "false" : "true");
  rows.print();
  publisher->close(10s);
  if (pub.broken)
    return exit_usage;
  return confirmed && pub.errors == 0 ? exit_ok : exit_lost;
}

int run_subscribe_rate(client::connection& conn, const run_config& cfg) {
  auto prefix = "bench." + random_run_id() + ".sub.";
  auto session = conn.open_session();
  cpu_meter broker_cpu{cfg.broker_pid};
  auto log = subscribe_all(
      *session, cfg.subscribes,
      [&](uint64_t i) { return prefix + std::to_string(i); }, 1, cfg,
      deadline_after(cfg, now_ns()));
  auto cpu_s = broker_cpu.used();
  result_rows rows{cfg};
  rows.text("patterns", "patterns", prefix + "<i>");
  auto code = finish_subscribes(rows, cfg, log, cpu_s);
  session->close(30s);
  return code;
}

int run_subscribe_one_topic(client::connection& conn, const run_config& cfg) {
  auto topic = "bench." + random_run_id() + ".one";
  auto deadline = deadline_after(cfg, now_ns());
  // The publisher caches the topic's route, so each subscribe updates it.
  auto publisher = conn.open_session();
  publisher->publish({{topic, std::string(cfg.size, 'x'), {}, {}}}, true, 1);
  if (!await_answer(*publisher, pb::ServerFrame::kPublishConfirm, deadline)) {
    errorf("UNAVAILABLE", "no confirm for %s", topic.c_str());
    return exit_usage;
  }
  auto subscriber = conn.open_session();
  cpu_meter broker_cpu{cfg.broker_pid};
  auto log = subscribe_all(
      *subscriber, cfg.subscribes, [&](uint64_t) { return topic; }, 1, cfg,
      deadline);
  auto cpu_s = broker_cpu.used();
  // One more message reaches every subscription.
  publisher->publish({{topic, std::string(cfg.size, 'x'), {}, {}}}, true, 2);
  auto got = subscriber->receive(log.answered_ns.size() - log.refused, 30s);
  result_rows rows{cfg};
  rows.text("topic", "topic", topic);
  rows.count("deliveries of one message", "deliveries", got.size());
  auto code = finish_subscribes(rows, cfg, log, cpu_s);
  subscriber->close(30s);
  publisher->close(10s);
  return code == exit_ok && got.size() != cfg.subscribes ? exit_lost : code;
}

int run_subscribe_wildcard(client::connection& conn, const run_config& cfg) {
  auto topics = fresh_topics(random_run_id(), "x", cfg.topics);
  auto deadline = deadline_after(cfg, now_ns());
  publish_stats pub;
  bool confirmed = false;
  auto publisher = publish_once(conn, cfg, topics, deadline, pub, confirmed);
  if (!confirmed || pub.errors > 0) {
    errorf("UNAVAILABLE", "the topics were not published");
    return pub.broken ? exit_usage : exit_lost;
  }
  auto live = count_live(conn, topics.pattern);
  auto subscriber = conn.open_session();
  cpu_meter broker_cpu{cfg.broker_pid};
  std::vector<double> ms;
  bool failed = false;
  for (unsigned r = 1; r <= cfg.repeats && !failed; ++r) {
    auto sent = now_ns();
    subscriber->subscribe(r, topics.pattern, "", r);
    failed = !await_answer(*subscriber, pb::ServerFrame::kSubscribed, deadline);
    if (!failed)
      ms.push_back(static_cast<double>(now_ns() - sent) / 1e6);
    subscriber->unsubscribe(r, 0);
    failed = failed || !await_answer(*subscriber,
                                     pb::ServerFrame::kUnsubscribed, deadline);
  }
  auto cpu_s = broker_cpu.used();
  auto sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  std::string each = "[";
  for (auto x : ms)
    each += (each.size() > 1 ? "," : "") + fixed(x, 3);
  result_rows rows{cfg};
  rows.text("pattern", "pattern", topics.pattern);
  rows.count("topics", "topics", cfg.topics);
  rows.raw("live topics of the run", "live_topics",
           live ? std::to_string(live->matched) : "null");
  rows.count("subscribes timed", "repeats", ms.size());
  rows.number("first (ms)", "first_ms", ms.empty() ? 0 : ms.front(), 3);
  rows.number("median (ms)", "median_ms",
              sorted.empty() ? 0 : sorted[sorted.size() / 2], 3);
  rows.number("max (ms)", "max_ms", sorted.empty() ? 0 : sorted.back(), 3);
  rows.raw("each (ms)", "each_ms", each + "]");
  rows.cpu(cpu_s, ms.size(), "subscribe");
  rows.raw("timed out", "timed_out", failed ? "true" : "false");
  rows.print();
  subscriber->close(10s);
  publisher->close(10s);
  return failed ? exit_lost : exit_ok;
}

} // namespace tb::bench
