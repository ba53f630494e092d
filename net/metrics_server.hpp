// The Prometheus endpoint: a small HTTP listener of its own (Debian's
// cpp-httplib), apart from the gRPC port. `GET /metrics` asks the stats
// source for a Stats reply and answers it in the text format
// (net/metrics_format.hpp); any other path is 404.
//
//   scraper --HTTP--> httplib thread --stats_source--> collector (CAF)
//                          |   waits <= stats_timeout      | callback, once
//                          +<------------------------------+
//                          +--> 200 text/plain, or 503 and a one-line reason
//
// With a console handler (net/console_api.hpp), the same listener serves
// the console (issue 27): its page at `/` (and `/console.js`, `/charts.js`,
// `/console.css`, from memory: net/console_assets.hpp), and its API under
// `/api/`, answered like a scrape (waits <= stats_timeout, else 503).
//
// Bounded: `threads` serve connections, `max_queued` accepted connections
// wait for one, and beyond that the accepting thread serves the connection
// itself, so that further clients wait in the kernel's listen backlog. One
// request per connection; idle, slow and stalled clients are cut off after
// `io_timeout`.

#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "config/tls_config.hpp"
#include "net/console_api.hpp"
#include "net/metrics_format.hpp"
#include "net/stats_collector.hpp"
#include "routing/error.hpp"

namespace tb {

class tls_store;

/// Hands a Stats request to whatever collects it (in the broker,
/// `broker_service::collect_stats`); the callback must run exactly once, on
/// any thread, possibly before this returns. Must not block.
using stats_source =
    std::function<void(const tinybroker::v1::StatsRequest&, stats_callback)>;

/// How the metrics endpoint listens and answers.
struct metrics_server_settings {
  /// The listen address, `HOST:PORT` (port 0 picks a free port).
  std::string listen;
  /// HTTPS with this certificate and key (and client certificates required
  /// and checked against `client_ca` if set); plain HTTP without `cert`.
  /// A TLS handshake that stalls is cut off after `io_timeout`, as any read.
  tls_config tls;
  /// The broker's current TLS identity, if it has one: with `tls` set, each
  /// handshake serves it (so that a reload reaches new connections), and
  /// each scrape exposes its expiry as
  /// `tinybroker_tls_certificate_expiry_timestamp_seconds`.
  std::shared_ptr<tls_store> tls_identity;
  /// What the scrape exposes.
  metrics_options options;
  /// How long a scrape waits for the stats before it answers 503.
  std::chrono::milliseconds stats_timeout{5000};
  /// The console's API; none: no console (its paths are 404).
  console_handler console;
  /// Threads that serve connections.
  std::size_t threads = 2;
  /// Accepted connections that may wait for a free thread.
  std::size_t max_queued = 8;
  /// How long a connection may stay idle, or a read or write may stall,
  /// before it is closed (whole seconds, at least 1).
  std::chrono::seconds io_timeout{1};
};

/// The HTTP listener of the metrics endpoint. Create it, `start()` it,
/// then `shut_down()` and `wait_stopped()` (the destructor does both).
/// Only one thread may call its member functions.
class metrics_server {
public:
  /// Prepares a listener that asks `source` for the stats; nothing runs
  /// before `start()`.
  metrics_server(stats_source source, metrics_server_settings settings);

  /// Shuts down and waits up to 100 ms for the HTTP threads; threads still
  /// running then are left to end on their own.
  ~metrics_server();

  metrics_server(const metrics_server&) = delete;
  metrics_server& operator=(const metrics_server&) = delete;

  /// Binds the listen address (without port reuse, so that a busy port is
  /// an error, never a shared one) and starts serving; returns
  /// `cannot listen on ADDRESS: REASON` if the address cannot be bound, or
  /// `cannot load the TLS certificate, key or client CA` if they do not
  /// load.
  error_info start();

  /// Returns the address listened on, with the port bound (after `start`).
  const std::string& address() const noexcept {
    return address_;
  }

  /// Closes the listening socket, answers scrapes still waiting for stats
  /// with 503 and returns at once. Once it returned, the stats source is
  /// never called again, so that what it refers to may go.
  void shut_down();

  /// Waits up to `patience` for the HTTP threads to end (a connection in
  /// progress ends within `io_timeout`); false if they still run (they end
  /// on their own, and keep what they use alive until then).
  bool wait_stopped(std::chrono::milliseconds patience);

  /// The state shared with the HTTP threads and stats callbacks.
  struct shared_state;

private:
  std::shared_ptr<shared_state> state_;
  metrics_server_settings settings_;
  std::string address_;
  bool started_ = false;
  bool stopped_ = false;
};

} // namespace tb
