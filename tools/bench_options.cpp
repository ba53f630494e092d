// tinybroker-bench's presets and help text (tools/bench_options.hpp).

#include "tools/bench_options.hpp"

namespace tb::bench {

namespace {

// The scenarios that are not fan-out, their kinds and default --topics.
struct named_kind {
  const char* name;
  scenario_kind kind;
  unsigned topics;
};
constexpr named_kind kinds[] = {
    {"queue", scenario_kind::queue, 1},
    {"s3", scenario_kind::queue, 1},
    {"idle", scenario_kind::idle, 1},
    {"held", scenario_kind::held, 1},
    {"topics-new", scenario_kind::topics_new, 100'000},
    {"subscribe-rate", scenario_kind::subscribe_rate, 1},
    {"subscribe-one-topic", scenario_kind::subscribe_one_topic, 1},
    {"subscribe-wildcard", scenario_kind::subscribe_wildcard, 10'000},
    {"expiry", scenario_kind::expiry, 20'000},
    {"topic-memory", scenario_kind::topic_memory, 100'000},
    {"timers", scenario_kind::timers, 1},
    {"delay", scenario_kind::schedule, 1},
    {"ttl", scenario_kind::schedule, 1},
    {"priority", scenario_kind::schedule, 1},
    {"request", scenario_kind::request, 1},
};

} // namespace

std::string apply_preset(run_config& cfg, const explicit_flags& given) {
  const auto& name = cfg.scenario;
  cfg.kind = scenario_kind::fanout;
  for (auto& k : kinds)
    if (name == k.name) {
      cfg.kind = k.kind;
      if (!given.topics)
        cfg.topics = k.topics;
    }
  if (name == "s2" && !given.subscribers)
    cfg.subscribers = 4;
  if (name == "s4") {
    if (!given.rate)
      cfg.rate = 5000;
    if (!given.messages)
      cfg.messages = static_cast<uint64_t>(cfg.rate * 10);
  }
  if (name == "s5" && !given.topics)
    cfg.topics = 1000;
  if (name == "timers" && !given.messages)
    cfg.messages = 100'000;
  if (cfg.kind == scenario_kind::schedule && !given.messages)
    cfg.messages = 20'000;
  if (name == "request") {
    if (!given.rate)
      cfg.rate = 1000;
    if (!given.messages)
      cfg.messages = static_cast<uint64_t>(cfg.rate * 10);
  }
  if (cfg.kind == scenario_kind::queue && cfg.size < 16)
    return "--scenario " + name +
           " needs --size of at least 16 (send time and sequence number)";
  if (cfg.publishers > 1 && cfg.size < 16)
    return "--publishers above 1 needs --size of at least 16 (the sequence "
           "number tells each publisher's order)";
  if (cfg.publishers > cfg.messages)
    return "--publishers must not exceed --messages";
  bool reads_memory = cfg.kind == scenario_kind::idle ||
                      cfg.kind == scenario_kind::held ||
                      cfg.kind == scenario_kind::topic_memory;
  if (reads_memory && cfg.broker_pid <= 0)
    return "--scenario " + name +
           " needs --broker-pid (the broker's process id on this host)";
  if (cfg.rate > 0 && cfg.messages / cfg.rate > cfg.max_seconds)
    return "--messages at --rate take longer than --max-seconds";
  return "";
}

std::string description_text() {
  return "tinybroker-bench: measures a running tinybroker. P publisher "
         "sessions (default 1) publish N messages to bench.<run id>.t (or "
         "spread over T topics orders.<i>.created) in frames of B, each at "
         "most "
         "64 frames unconfirmed, as fast as possible or at --rate; reports "
         "throughput and end-to-end latency.\n"
         "Scenario fanout (s1; s2 = 4 subscribers): K subscriber sessions "
         "subscribe to bench.<run id>.>.\n"
         "Scenario queue (s3): W worker sessions join a fresh group "
         "bench-<run id>, each acking every Deliveries frame with one Ack "
         "frame; checks each message arrived exactly once in total.\n"
         "Scenario s4: fan-out at --rate (default 5000 msgs/s, 10 s of "
         "messages); latency counts from each message's scheduled send time.\n"
         "Scenario request: a caller sends --messages requests (default 10 s "
         "worth) at --rate (default 1000/s) to a responder that echoes each; "
         "reports the round trip's p50/p99.\n"
         "Scenario s5: fan-out over --topics (default 1000) topics "
         "orders.<i>.created to a subscriber on orders.*.created.\n"
         "Scenario idle: opens --sessions sessions with one subscription each "
         "(all on one connection, or each on its own with --connections own) "
         "and reports the broker's resident memory per session.\n"
         "Scenario held: publishes N messages to a fresh group without "
         "members and reports the broker's resident memory per held message.\n"
         "Routing scenarios (names bench.<run id>.<tag>.<i>; --broker-pid adds "
         "the broker's CPU time to every scenario):\n"
         "Scenario topics-new: one publisher publishes one message to each of "
         "--topics (default 100000) new topics, in frames of B; reports the "
         "time until all are confirmed and topics/s.\n"
         "Scenario subscribe-rate: one session subscribes to --subscribes "
         "(default 10000) distinct literal patterns, at most --in-flight (64) "
         "unconfirmed; reports subscribes/s and the time per subscribe of the "
         "first and last 10%.\n"
         "Scenario subscribe-one-topic: a publisher publishes to one topic and "
         "stays (it caches the route); then one session makes --subscribes "
         "subscribes (distinct ids) to that topic, as subscribe-rate; then one "
         "more message must reach every subscription.\n"
         "Scenario subscribe-wildcard: a publisher publishes once to each of "
         "--topics (default 10000) topics and stays; then --repeats (5) times "
         "a subscribe to their `>` pattern is timed (and undone).\n"
         "Scenario expiry: a publisher publishes once to each of --topics "
         "(default 20000) topics and closes; then a probe subscribes, "
         "unsubscribes and publishes to a new topic every 5 ms for --window "
         "seconds; reports p50, p99 and max of each round trip. Start the "
         "broker with a short topic_idle_timeout (e.g. \"2s\") and a window "
         "of at least 3 times it.\n"
         "Scenario topic-memory: publishes once to each of --topics (default "
         "100000) topics; reports the broker's resident memory per topic while "
         "the publisher is connected and after it closed.\n"
         "Scenario timers: a fresh group (ack_wait 3 s) holds N (default "
         "100000) timers: W workers nack every delivery with a delay of 1 to "
         "3 s, then hold N more unanswered until ack_wait passes and W new "
         "members get them; reports p50, p99 and max lateness of the "
         "redeliveries, and how many were over 20 ms late.\n"
         "Scenario delay: a fan-out subscriber; N (default 20000) messages "
         "each delayed 200 to 1100 ms; reports publish msgs/s and lateness "
         "(arrival minus acceptance plus delay) p50, p99, max and how many "
         "were over 20 ms late.\n"
         "Scenario ttl: the same with a TTL of 60 s on every message; "
         "reports msgs/s, latency p50/p99 and how many expired.\n"
         "Scenario priority: a fresh group holds N messages of priorities 0-9 "
         "before one worker joins and acks; reports delivery msgs/s, latency "
         "and priority inversions (0 with strict priority).\n"
         "Exit code: 0 all delivered, 1 messages lost, duplicated or timed "
         "out, 2 usage or connection error.";
}

std::string examples_text() {
  return "Examples (1,000,000 x 128 B, batch 256):\n"
         "  S1: tinybroker-bench --server 127.0.0.1:7400 --scenario s1 "
         "--paced\n"
         "  S2: tinybroker-bench --server 127.0.0.1:7400 --scenario s2 "
         "--paced\n"
         "  S3: tinybroker-bench --server 127.0.0.1:7400 --scenario s3\n"
         "  S3 with auth: TINYBROKER_TOKEN_FILE=bench.token tinybroker-bench "
         "--server 127.0.0.1:7400 --scenario s3\n"
         "  S4: tinybroker-bench --server 127.0.0.1:7400 --scenario s4 "
         "--rate 50000\n"
         "  S5: tinybroker-bench --server 127.0.0.1:7400 --scenario s5 "
         "--paced\n"
         "  idle: tinybroker-bench --server 127.0.0.1:7400 --scenario "
         "idle --connections own --broker-pid $(pidof tinybroker)\n"
         "  held: tinybroker-bench --server 127.0.0.1:7400 --scenario "
         "held --broker-pid $(pidof tinybroker)\n"
         "  topics-new: tinybroker-bench --server 127.0.0.1:7400 --scenario "
         "topics-new --topics 100000 --broker-pid $(pidof tinybroker)\n"
         "  expiry (broker with topic_idle_timeout = \"2s\"): tinybroker-bench "
         "--server 127.0.0.1:7400 --scenario expiry --topics 20000 --window 6\n"
         "  timers: tinybroker-bench --server 127.0.0.1:7400 --scenario timers "
         "--messages 100000 --workers 2";
}

} // namespace tb::bench
