// The settings of a tinybroker-bench run: which scenario, against which
// broker, with how many clients, at what rate (tools/tinybroker_bench.cpp
// reads them from the command line).

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tb::client {
class connection;
} // namespace tb::client

namespace tb::bench {

/// The subscription id every subscriber and worker uses on its own stream.
constexpr uint64_t subscription_id = 1;

/// What a scenario does, whatever name selected it.
enum class scenario_kind {
  /// Subscribers take every message (S1, S2, S4, S5).
  fanout,
  /// Workers in one group ack every message (S3).
  queue,
  /// Sessions sit idle while the broker's memory is read.
  idle,
  /// A group without members holds every message while the broker's
  /// memory is read.
  held,
  /// One publisher publishes once to each of N new topics.
  topics_new,
  /// One session subscribes to N distinct literal patterns.
  subscribe_rate,
  /// N subscribes to one topic whose route a publisher caches.
  subscribe_one_topic,
  /// One `>` subscribe over N live topics, a few times.
  subscribe_wildcard,
  /// Probes subscribe and new-topic round trips while N topics expire.
  expiry,
  /// The broker's memory per topic, with the publisher connected and after.
  topic_memory,
  /// How late a group's nack delays and ack_wait expiries fire with N
  /// pending.
  timers,
  /// delay, ttl, priority: issue 29's message delays, TTLs and
  /// priorities (tools/bench_schedule.cpp).
  schedule,
  /// Request/reply round trips at a fixed rate (tools/bench_request.cpp).
  request,
};

/// The settings of one run, as given on the command line.
struct run_config {
  /// The broker's address, `HOST:PORT`.
  std::string server;
  /// The address the publishing sessions use (`--publish-server`; issue
  /// 30: a cluster's node); empty: `server`.
  std::string publish_server;
  /// The address the subscribers, workers and responders use
  /// (`--subscribe-server`); empty: `server`.
  std::string subscribe_server;
  /// The connections to those two, made by main (null: the run's main
  /// connection, to `server`); see `publish_connection`.
  client::connection* publish_conn = nullptr;
  /// See `publish_conn`.
  client::connection* subscribe_conn = nullptr;
  /// With several --subscribe-server addresses (A,B,C; a cluster's
  /// nodes): a connection to each; subscriber i uses the (i mod n)th
  /// (tools/bench_cluster.hpp). Empty otherwise.
  std::vector<client::connection*> subscribe_conns;
  /// The scenario's name as given: "fanout", "queue", "s1" ... "s5", "idle",
  /// "held", or a routing scenario (tools/bench_routing.hpp).
  std::string scenario = "fanout";
  /// What the scenario does.
  scenario_kind kind = scenario_kind::fanout;
  /// Messages to publish.
  uint64_t messages = 1'000'000;
  /// Payload bytes per message (at least 8: the send timestamp).
  std::size_t size = 128;
  /// Messages per publish frame (at a fixed rate: at most this many).
  std::size_t batch = 256;
  /// Publisher sessions, each on its own stream and thread, each
  /// publishing its share of `messages`.
  unsigned publishers = 1;
  /// Messages per second over all publishers; 0 = as fast as possible. At
  /// a fixed rate each message's payload carries its scheduled send time.
  double rate = 0;
  /// Topics the messages are spread over, round robin; more than 1 means
  /// `orders.<i>.created` with a subscriber on `orders.*.created` (S5).
  unsigned topics = 1;
  /// Idle sessions to open (scenario idle).
  unsigned sessions = 1000;
  /// Scenario idle: give each session its own channel and TCP connection
  /// (`--connections own`) instead of sharing one.
  bool own_connections = false;
  /// Scenario idle: seconds to wait after the last subscribe was confirmed
  /// before reading the broker's memory again (`--settle`); 0 reads at once.
  double settle_seconds = 0;
  /// The broker's process id, whose resident memory the memory scenarios
  /// read and whose CPU time every scenario reports; 0 = not given.
  int broker_pid = 0;
  /// Fan-out subscriber sessions (scenario fanout).
  unsigned subscribers = 1;
  /// Group member sessions (scenario queue).
  unsigned workers = 4;
  /// Each worker's max_in_flight (scenario queue).
  uint32_t max_in_flight = 256;
  /// Subscribes to make (subscribe-rate, subscribe-one-topic).
  uint64_t subscribes = 10'000;
  /// Most unconfirmed subscribes at a time (subscribe-rate,
  /// subscribe-one-topic).
  unsigned in_flight = 64;
  /// Subscriptions per frame (subscribe-rate, subscribe-one-topic): 1
  /// sends Subscribe frames, more sends SubscribeBatch frames.
  unsigned per_frame = 1;
  /// Timed `>` subscribes (subscribe-wildcard).
  unsigned repeats = 5;
  /// Seconds the probe runs after the publisher closed (expiry).
  double window = 10;
  /// The most seconds the run may take.
  double max_seconds = 60;
  /// Also keep the publisher at most 64 frames ahead of the slowest
  /// subscriber (fanout: no subscription buffer overflows) or of the
  /// workers' acks (queue: the group holds little).
  bool paced = false;
  /// Give every published message a unique msg_id (issue 28), as an
  /// idempotent client does: 8 random bytes of the run and the message's
  /// number in 7 bytes (client/msg_id.hpp).
  bool msg_ids = false;
  /// With `msg_ids`: each message carries its own id (as a user's own ids
  /// travel); without, a frame carries its first id alone
  /// (`Publish.msg_id_base`), as the idempotent clients send them.
  bool msg_id_each = false;
  /// Print one JSON object instead of a table.
  bool json = false;
};

} // namespace tb::bench
