// Tests of the metrics HTTP listener with stand-in stats sources: what a
// scrape answers (200, 404, 503 with a reason), the bounds (threads, the
// stats timeout, a prompt stop) and the port rules (no shared port).

#include "net/metrics_server.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;
using tb::metrics_server;
using tb::metrics_server_settings;
using tb::stats_callback;

// Settings on a free loopback port with a short stats timeout.
metrics_server_settings loopback(std::chrono::milliseconds timeout = 2s) {
  metrics_server_settings settings;
  settings.listen = "127.0.0.1:0";
  settings.stats_timeout = timeout;
  return settings;
}

// A source that answers at once with `published` messages.
tb::stats_source answering(uint64_t published) {
  return [published](const pb::StatsRequest&, stats_callback done) {
    pb::StatsReply reply;
    reply.mutable_broker()->set_published(published);
    done(reply, {});
  };
}

// A source that keeps every callback and never answers by itself.
struct silent_source {
  std::mutex mutex;
  std::vector<stats_callback> pending;
  std::atomic<int> calls{0};
  std::promise<void> called; // set by the first call

  tb::stats_source source() {
    return [this](const pb::StatsRequest&, stats_callback done) {
      std::lock_guard<std::mutex> guard{mutex};
      if (++calls == 1)
        called.set_value();
      pending.push_back(std::move(done));
    };
  }
};

// A client of `server` with a generous read timeout.
httplib::Client client_of(const metrics_server& server) {
  auto address = server.address();
  auto colon = address.rfind(':');
  httplib::Client client{address.substr(0, colon),
                         std::stoi(address.substr(colon + 1))};
  client.set_read_timeout(10, 0);
  return client;
}

TEST(metrics_server, get_metrics_answers_the_text_format) {
  metrics_server server{answering(42), loopback()};
  ASSERT_FALSE(server.start()) << "cannot start";
  auto res = client_of(server).Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"),
            "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(res->body.find("\ntinybroker_messages_published_total 42\n"),
            std::string::npos)
      << res->body;
}

TEST(metrics_server, the_request_asks_for_groups_and_only_maybe_topics) {
  std::vector<pb::StatsRequest> seen;
  auto recording = [&seen](const pb::StatsRequest& request,
                           stats_callback done) {
    seen.push_back(request);
    pb::StatsReply reply;
    done(reply, {});
  };
  auto settings = loopback();
  settings.options.per_topic = true;
  metrics_server server{recording, settings};
  ASSERT_FALSE(server.start());
  ASSERT_TRUE(client_of(server).Get("/metrics"));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].topic_pattern(), ">");
  EXPECT_EQ(seen[0].limit(), 10000u);
}

TEST(metrics_server, other_paths_and_methods_are_404) {
  metrics_server server{answering(1), loopback()};
  ASSERT_FALSE(server.start());
  auto client = client_of(server);
  for (auto path : {"/", "/metrics/", "/metricsx", "/favicon.ico"}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
    EXPECT_EQ(res->body, "not found; the metrics are at /metrics\n");
  }
  auto post = client.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 404);
}

TEST(metrics_server, a_failing_collector_is_503_with_its_reason) {
  auto failing = [](const pb::StatsRequest&, stats_callback done) {
    pb::StatsReply reply;
    done(reply, tb::make_error_info(tb::ec::unimplemented, "not yet"));
  };
  metrics_server server{failing, loopback()};
  ASSERT_FALSE(server.start());
  auto res = client_of(server).Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->body, "the stats are not available: not yet\n");
}

TEST(metrics_server, stats_that_do_not_arrive_in_time_are_503) {
  silent_source silent;
  metrics_server server{silent.source(), loopback(200ms)};
  ASSERT_FALSE(server.start());
  auto start = std::chrono::steady_clock::now();
  auto res = client_of(server).Get("/metrics");
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->body, "the stats did not arrive within 200ms\n");
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 5s);
  // A late answer finds nobody waiting, and harms nothing.
  pb::StatsReply late;
  for (auto& done : silent.pending)
    done(late, {});
}

TEST(metrics_server, a_callback_on_another_thread_is_awaited) {
  auto later = [](const pb::StatsRequest&, stats_callback done) {
    std::thread{[done = std::move(done)] {
      std::this_thread::sleep_for(50ms); // the collector takes a while
      pb::StatsReply reply;
      reply.mutable_broker()->set_published(7);
      done(reply, {});
    }}.detach();
  };
  metrics_server server{later, loopback()};
  ASSERT_FALSE(server.start());
  auto res = client_of(server).Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("published_total 7\n"), std::string::npos);
}

TEST(metrics_server, shut_down_answers_waiting_scrapes_and_stops_promptly) {
  silent_source silent;
  metrics_server server{silent.source(), loopback(30s)};
  ASSERT_FALSE(server.start());
  auto scrape = std::async(std::launch::async, [&server] {
    return client_of(server).Get("/metrics");
  });
  ASSERT_EQ(silent.called.get_future().wait_for(10s),
            std::future_status::ready);
  auto start = std::chrono::steady_clock::now();
  server.shut_down();
  EXPECT_TRUE(server.wait_stopped(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  auto res = scrape.get();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->body, "the broker is stopping\n");
  // Nothing calls the source after shut_down; a new client is refused.
  EXPECT_FALSE(client_of(server).Get("/metrics"));
  EXPECT_EQ(silent.calls, 1);
}

TEST(metrics_server, concurrent_scrapes_are_served_by_a_bounded_pool) {
  std::mutex mutex;
  int running = 0, most = 0;
  auto slow = [&](const pb::StatsRequest&, stats_callback done) {
    {
      std::lock_guard<std::mutex> guard{mutex};
      most = std::max(most, ++running);
    }
    std::this_thread::sleep_for(30ms); // a slow source: threads pile up
    {
      std::lock_guard<std::mutex> guard{mutex};
      --running;
    }
    pb::StatsReply reply;
    done(reply, {});
  };
  auto settings = loopback();
  settings.threads = 2;
  settings.max_queued = 2;
  metrics_server server{slow, settings};
  ASSERT_FALSE(server.start());
  std::vector<std::future<int>> scrapes;
  for (int i = 0; i < 12; ++i)
    scrapes.push_back(std::async(std::launch::async, [&server] {
      auto res = client_of(server).Get("/metrics");
      return res ? res->status : -1;
    }));
  for (auto& s : scrapes)
    EXPECT_EQ(s.get(), 200);
  // Two pool threads, plus the accepting thread when the queue is full.
  EXPECT_GE(most, 1);
  EXPECT_LE(most, 3);
}

TEST(metrics_server, a_busy_port_is_an_error_never_a_shared_port) {
  metrics_server first{answering(1), loopback()};
  ASSERT_FALSE(first.start());
  auto settings = loopback();
  settings.listen = first.address();
  metrics_server second{answering(2), settings};
  auto err = second.start();
  ASSERT_TRUE(err) << "two listeners share " << first.address();
  EXPECT_EQ(err.text,
            "cannot listen on " + first.address() + ": address already in use");
}

TEST(metrics_server, an_address_that_does_not_resolve_is_an_error) {
  auto settings = loopback();
  settings.listen = "no-such-host.invalid:0";
  metrics_server server{answering(1), settings};
  auto err = server.start();
  ASSERT_TRUE(err);
  EXPECT_NE(err.text.find("cannot listen on no-such-host.invalid:0: cannot "
                          "resolve host"),
            std::string::npos)
      << err.text;
}

TEST(metrics_server, tls_files_that_do_not_load_are_an_error) {
  auto settings = loopback();
  settings.tls = {"/nonexistent/server.crt", "/nonexistent/server.key", ""};
  metrics_server server{answering(1), settings};
  auto err = server.start();
  ASSERT_TRUE(err) << "started HTTPS without a certificate";
  EXPECT_EQ(err.text, "cannot load the TLS certificate, key or client CA");
}

TEST(metrics_server, port_zero_reports_the_port_bound) {
  metrics_server server{answering(1), loopback()};
  ASSERT_FALSE(server.start());
  EXPECT_EQ(server.address().rfind("127.0.0.1:", 0), 0u);
  EXPECT_NE(server.address(), "127.0.0.1:0");
}

} // namespace
