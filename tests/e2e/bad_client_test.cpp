// End to end: clients that misbehave (issue 10, section 3). A subscriber
// that stops reading, clients that connect and never send, and thousands of
// subscribe/unsubscribe and connect/disconnect cycles leave the broker's
// memory and actor count bounded. Each test prints its figures as
// `[ RSS  ]`, `[ ACTORS ]` and `[ TIME ]` lines so that they can be quoted.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e_fixture.hpp"
#include "raw_client.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;

using clock_type = std::chrono::steady_clock;

// Milliseconds since `start`.
long long ms_since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             clock_type::now() - start)
      .count();
}

// Counts the occurrences of `text` in `haystack`.
size_t count_of(const std::string& haystack, const std::string& text) {
  size_t n = 0;
  for (auto at = haystack.find(text); at != std::string::npos;
       at = haystack.find(text, at + text.size()))
    ++n;
  return n;
}

/// Runs the broker at debug level: it then logs, for each session it opens,
/// how many actors are running (`actors=N`), which is how these tests count
/// actors.
class BadClientTest : public BrokerTest {
protected:
  std::vector<std::string> broker_args() override {
    return {"--config", write_temp_file("log_level = \"debug\"\n", ".toml")};
  }

  // Returns the broker's resident set size in KiB.
  uint64_t rss() {
    return rss_kib(broker_->pid());
  }

  // Opens and closes a probe session and returns the number of actors the
  // broker logged as running when the probe opened (the probe's own
  // session actor not yet among them); nothing if it logged none.
  std::optional<size_t> probe_actors() {
    static const std::string marker = " actors=";
    auto seen = count_of(broker_->output(), marker);
    auto probe = conn_->open_session();
    auto logged = broker_->wait_for_occurrences(marker, seen + 1, patience);
    probe->close();
    if (!logged)
      return std::nullopt;
    auto out = broker_->output();
    auto begin = out.rfind(marker) + marker.size();
    return std::stoul(out.substr(begin, out.find('\n', begin) - begin));
  }

  // Returns the least count of at least three probes spread over at least
  // 500 ms: a session actor of an ended stream (the previous probe's, or a
  // cancelled client's) stops a moment after its stream, and on a loaded
  // machine that moment can outlast three quick probes (a CI run counted a
  // cancelled stream's actor at the start and not at the end).
  std::optional<size_t> settled_actors() {
    std::optional<size_t> least;
    auto until = clock_type::now() + std::chrono::milliseconds(500);
    for (int i = 0; i < 3 || clock_type::now() < until; ++i) {
      auto count = probe_actors();
      if (!count)
        return count;
      least = least ? std::min(*least, *count) : *count;
    }
    return least;
  }

  // Probes until the broker runs `target` actors or `patience` passed;
  // returns the last settled count.
  std::optional<size_t> wait_actors(size_t target) {
    auto deadline = clock_type::now() + patience;
    auto count = settled_actors();
    while (count && *count != target && clock_type::now() < deadline)
      count = settled_actors();
    return count;
  }

  // Polls the broker's RSS until it is at most `limit` KiB or `patience`
  // passed (the allocator hands freed memory back after a short decay);
  // returns the last figure.
  uint64_t wait_rss_at_most(uint64_t limit) {
    auto deadline = clock_type::now() + 2 * patience;
    auto kib = rss();
    while (rss_is_meaningful && kib > limit && clock_type::now() < deadline) {
      // RSS has no event to wait for: sample it ten times a second.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      kib = rss();
    }
    return kib;
  }

  // The RSS a cycle test may end with: its start plus 10 %, at least
  // 8 MiB. Under connection cycles the broker's RSS rises by 3 to 5 MiB
  // in the first few thousand (allocator and gRPC caches) and then stays
  // flat (measured up to 40,000 cycles); a leak of 1 KiB per subscribe
  // cycle (10,000) or 2 KiB per connection cycle (4,000) would exceed the
  // tolerance, and an idle stream costs 25 KiB.
  static uint64_t rss_tolerance(uint64_t start) {
    return start + std::max<uint64_t>(start / 10, 8 * 1024);
  }
};

// -- a subscriber that stops reading ------------------------------------------

TEST_F(BadClientTest, SubscriberThatStopsReadingCostsBoundedMemory) {
  constexpr size_t batches = 320;
  constexpr size_t batch_size = 1000;
  constexpr size_t total = batches * batch_size;
  constexpr size_t payload_bytes = 512;
  // The figure documented in docs/semantics.md. A fan-out subscription
  // buffers at most 65,536 messages (and a session 64 MiB); 320,000
  // messages of 512 bytes are 156 MiB of payload alone, so a broker that
  // kept them all would pass the bound.
  constexpr uint64_t rss_bound_kib = 128 * 1024;
  raw_session slow{raw_channel(broker_->address())};
  pb::ClientFrame sub;
  sub.mutable_subscribe()->set_subscription_id(1);
  sub.mutable_subscribe()->set_pattern("slow.topic");
  ASSERT_TRUE(slow.send(sub));
  ASSERT_TRUE(slow.read_until(pb::ServerFrame::kSubscribed));
  // From here on the subscriber reads nothing until every message is in.
  auto rss_start = rss();
  auto peak = rss_start;
  auto start = clock_type::now();
  auto publisher = conn_->open_session();
  std::vector<client::outgoing_message> batch(
      batch_size, {"slow.topic", std::string(payload_bytes, 'p'), {}, {}});
  for (size_t b = 0; b < batches; ++b) {
    ASSERT_TRUE(publisher->publish(batch, true, b + 1));
    auto confirm =
        publisher->wait_for(pb::ServerFrame::kPublishConfirm, patience);
    ASSERT_TRUE(confirm.has_value()) << "no confirm for batch " << b;
    ASSERT_EQ(confirm->publish_confirm().results_size(),
              static_cast<int>(batch_size));
    peak = std::max(peak, rss());
  }
  auto publish_ms = ms_since(start);
  auto rss_end = rss();
  std::printf("[ RSS  ] slow reader: broker %s at start, %s peak, %s after "
              "%zu messages of %zu B; bound %s\n",
              mib(rss_start).c_str(), mib(peak).c_str(), mib(rss_end).c_str(),
              total, payload_bytes, mib(rss_bound_kib).c_str());
  std::printf("[ TIME ] slow reader: %zu messages published in %lld ms\n",
              total, publish_ms);
  if (rss_is_meaningful) {
    EXPECT_LT(peak, rss_bound_kib);
  }
  // Reading again, the subscriber gets what the broker kept and is told
  // how many it lost: together, every message published.
  size_t delivered = 0;
  uint64_t dropped = 0;
  uint64_t dropped_total = 0;
  size_t dropped_frames = 0;
  start = clock_type::now();
  while (delivered + dropped < total) {
    auto frame = slow.read();
    ASSERT_TRUE(frame.has_value())
        << "the stream ended after " << delivered << " deliveries and "
        << dropped << " reported losses";
    if (frame->has_deliveries())
      delivered += frame->deliveries().deliveries_size();
    if (frame->has_dropped()) {
      ++dropped_frames;
      dropped += frame->dropped().count();
      dropped_total = frame->dropped().total();
    }
  }
  std::printf("[ TIME ] slow reader: read %zu deliveries and %zu Dropped "
              "frames (%llu lost) in %lld ms\n",
              delivered, dropped_frames,
              static_cast<unsigned long long>(dropped), ms_since(start));
  EXPECT_EQ(delivered + dropped, total);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(dropped_total, dropped);
  EXPECT_GE(delivered, size_t{65536}); // the subscription's buffer, at least
  EXPECT_TRUE(slow.close().ok());
}

// -- clients that connect and never send --------------------------------------

TEST_F(BadClientTest, IdleClientsCostBoundedMemoryAndShutdownStillWorks) {
  constexpr size_t idle_streams = 200;
  constexpr size_t idle_sockets = 200;
  // Each idle Session stream holds a gRPC call, a reactor, a bridge and a
  // session actor; documented in docs/semantics.md.
  constexpr uint64_t per_stream_bound_kib = 64;
  constexpr uint64_t sockets_bound_kib = 8 * 1024;
  auto rss_start = rss();
  auto opened = count_of(broker_->output(), "session opened");
  std::vector<std::unique_ptr<raw_session>> streams;
  auto channel = raw_channel(broker_->address());
  for (size_t i = 0; i < idle_streams; ++i)
    streams.push_back(std::make_unique<raw_session>(channel));
  ASSERT_TRUE(broker_->wait_for_occurrences("session opened",
                                            opened + idle_streams, patience));
  auto rss_streams = rss();
  // Plain TCP connections that never even send the HTTP/2 preface.
  auto colon = broker_->address().rfind(':');
  auto port = std::stoi(broker_->address().substr(colon + 1));
  std::vector<int> sockets;
  for (size_t i = 0; i < idle_sockets; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    sockets.push_back(fd);
  }
  // The broker serves others meanwhile.
  auto start = clock_type::now();
  auto sub = subscriber(1, "busy.>");
  publish({"busy.one", "busy.two"});
  EXPECT_EQ(topics_of(sub->receive(2, patience)),
            std::vector<std::string>({"busy.one", "busy.two"}));
  auto serve_ms = ms_since(start);
  auto rss_all = rss();
  auto per_stream =
      rss_streams > rss_start ? (rss_streams - rss_start) / idle_streams : 0;
  std::printf("[ RSS  ] idle clients: broker %s at start, %s with %zu idle "
              "streams (%llu KiB each), %s with %zu idle sockets too\n",
              mib(rss_start).c_str(), mib(rss_streams).c_str(), idle_streams,
              static_cast<unsigned long long>(per_stream), mib(rss_all).c_str(),
              idle_sockets);
  std::printf("[ TIME ] idle clients: a subscribe, publish and delivery took "
              "%lld ms among them\n",
              serve_ms);
  if (rss_is_meaningful) {
    EXPECT_LT(per_stream, per_stream_bound_kib);
    EXPECT_LT(rss_all, rss_streams + sockets_bound_kib);
  }
  // Shutdown ends the idle streams and does not wait for the idle sockets.
  start = clock_type::now();
  auto code = broker_->stop(SIGTERM, std::chrono::seconds(10));
  auto stop_ms = ms_since(start);
  std::printf("[ TIME ] idle clients: the broker stopped in %lld ms\n",
              stop_ms);
  ASSERT_TRUE(code.has_value()) << "the broker did not stop";
  EXPECT_EQ(*code, 0) << broker_->output();
  EXPECT_LT(stop_ms, 5000); // shutdown_grace
  EXPECT_EQ(broker_->output().find("still open after shutdown_grace"),
            std::string::npos);
  for (auto& stream : streams)
    EXPECT_EQ(stream->finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  for (auto fd : sockets)
    close(fd);
}

// -- cycles -------------------------------------------------------------------

TEST_F(BadClientTest, SubscribeUnsubscribeCyclesLeaveNothingBehind) {
  constexpr size_t cycles = 10000;
  constexpr size_t window = 100;
  auto session = conn_->open_session();
  uint64_t next_id = 1;
  // Subscribes and then unsubscribes `n` patterns, `window` at a time.
  auto run_cycles = [&](size_t n) {
    for (size_t done = 0; done < n; done += window) {
      auto first = next_id;
      for (size_t i = 0; i < window; ++i, ++next_id) {
        // Literal, wildcard and distinct patterns, each its own trie path.
        auto pattern = next_id % 3 == 0 ? std::string{"cycle.topic"}
                       : next_id % 3 == 1
                           ? "cycle." + std::to_string(next_id)
                           : "cycle.*." + std::to_string(next_id) + ".>";
        ASSERT_TRUE(session->subscribe(next_id, pattern));
      }
      for (size_t i = 0; i < window; ++i)
        ASSERT_TRUE(session->wait_for(pb::ServerFrame::kSubscribed, patience));
      for (auto id = first; id < next_id; ++id)
        ASSERT_TRUE(session->unsubscribe(id));
      for (size_t i = 0; i < window; ++i)
        ASSERT_TRUE(
            session->wait_for(pb::ServerFrame::kUnsubscribed, patience));
    }
  };
  run_cycles(window); // warm-up: caches and pools the broker keeps
  auto actors_start = settled_actors();
  ASSERT_TRUE(actors_start.has_value()) << broker_->output();
  auto rss_start = rss();
  auto start = clock_type::now();
  run_cycles(cycles);
  auto cycles_ms = ms_since(start);
  auto actors_end = wait_actors(*actors_start);
  auto rss_end = wait_rss_at_most(rss_tolerance(rss_start));
  std::printf("[ ACTORS ] %zu subscribe/unsubscribe cycles: %zu running at "
              "start, %zu at end\n",
              cycles, *actors_start, actors_end.value_or(0));
  std::printf("[ RSS  ] %zu subscribe/unsubscribe cycles: broker %s at "
              "start, %s at end (tolerance %s)\n",
              cycles, mib(rss_start).c_str(), mib(rss_end).c_str(),
              mib(rss_tolerance(rss_start)).c_str());
  std::printf("[ TIME ] %zu subscribe/unsubscribe cycles: %lld ms\n", cycles,
              cycles_ms);
  EXPECT_EQ(actors_end, actors_start);
  if (rss_is_meaningful) {
    EXPECT_LE(rss_end, rss_tolerance(rss_start));
  }
  // The session subscribes as before.
  subscribe(*session, next_id, "cycle.after");
  publish({"cycle.after"});
  EXPECT_EQ(topics_of(session->receive(1, patience)),
            std::vector<std::string>({"cycle.after"}));
}

TEST_F(BadClientTest, ConnectDisconnectCyclesLeaveNothingBehind) {
  // Under ASan a cycle takes 8 ms instead of 1.6: 2,500 cycles still look
  // for memory errors over thousands of connections within the timeout.
  // Else 4,000 paced to 250 a second, so that the tests beside it keep
  // their share of the machine; a connect that gets no answer is made
  // again (connected_raw_channel).
  constexpr size_t cycles = under_sanitizer ? 2500 : 4000;
  constexpr auto cycle_spacing = std::chrono::milliseconds(4);
  constexpr int max_lost_connects = 5; // made again
  int lost_connects = 0;
  // Each cycle is a new connection (TCP and HTTP/2) with a Session stream
  // that subscribes and then ends: by a clean close, or (every other
  // cycle) by cancelling, as a crashed client would.
  auto run_cycles = [&](size_t n) {
    auto next_start = clock_type::now();
    for (size_t i = 0; i < n; ++i) {
      // A pace, not a wait for an event: it bounds the connection rate.
      std::this_thread::sleep_until(next_start);
      next_start += cycle_spacing;
      auto channel = connected_raw_channel(broker_->address(), lost_connects,
                                           max_lost_connects);
      ASSERT_NE(channel, nullptr)
          << "more than " << max_lost_connects << " connects lost";
      raw_session session{channel};
      pb::ClientFrame frame;
      frame.mutable_subscribe()->set_subscription_id(1);
      frame.mutable_subscribe()->set_pattern("connect.cycle");
      ASSERT_TRUE(session.send(frame));
      ASSERT_TRUE(session.read_until(pb::ServerFrame::kSubscribed));
      if (i % 2 == 0) {
        ASSERT_TRUE(session.close().ok());
      } else {
        session.cancel();
        session.finish();
      }
    }
  };
  run_cycles(100); // warm-up
  auto actors_start = settled_actors();
  ASSERT_TRUE(actors_start.has_value()) << broker_->output();
  auto rss_start = rss();
  auto start = clock_type::now();
  run_cycles(cycles);
  auto cycles_ms = ms_since(start);
  auto actors_end = wait_actors(*actors_start);
  auto rss_end = wait_rss_at_most(rss_tolerance(rss_start));
  std::printf("[ ACTORS ] %zu connect/disconnect cycles: %zu running at "
              "start, %zu at end\n",
              cycles, *actors_start, actors_end.value_or(0));
  std::printf("[ RSS  ] %zu connect/disconnect cycles: broker %s at start, "
              "%s at end (tolerance %s)\n",
              cycles, mib(rss_start).c_str(), mib(rss_end).c_str(),
              mib(rss_tolerance(rss_start)).c_str());
  std::printf("[ TIME ] %zu connect/disconnect cycles: %lld ms (%d "
              "connects lost and made again)\n",
              cycles, cycles_ms, lost_connects);
  EXPECT_EQ(actors_end, actors_start);
  if (rss_is_meaningful) {
    EXPECT_LE(rss_end, rss_tolerance(rss_start));
  }
  auto sub = subscriber(1, "connect.after");
  publish({"connect.after"});
  EXPECT_EQ(topics_of(sub->receive(1, patience)),
            std::vector<std::string>({"connect.after"}));
}

} // namespace
} // namespace tb::test
