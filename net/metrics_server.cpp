#include "net/metrics_server.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>
#include <sys/socket.h>

#include "net/console_http.hpp"
#include "net/listen_check.hpp"
#include "net/log.hpp"
#include "net/tls_credentials.hpp"
#include "net/tls_store.hpp"

namespace tb {

namespace pb = tinybroker::v1;

namespace {

// -- the connection pool ------------------------------------------------------

// httplib's task queue, bounded: `threads` serve connections, at most
// `max_queued` wait for one, and when that many wait the accepting thread
// serves the next connection itself (so it accepts no more meanwhile and
// further clients wait in the kernel's listen backlog). httplib's own
// ThreadPool queues accepted connections without a bound.
class caller_runs_pool final : public httplib::TaskQueue {
public:
  caller_runs_pool(std::size_t threads, std::size_t max_queued)
      : max_queued_(max_queued) {
    for (std::size_t i = 0; i < threads; ++i)
      threads_.emplace_back([this] { work(); });
  }

  ~caller_runs_pool() override {
    shutdown();
  }

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (jobs_.size() < max_queued_) {
        jobs_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
    }
    fn();
  }

  // Serves what is queued (after httplib closed the listening socket, each
  // queued connection is just closed), then joins the threads.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      closing_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
      if (t.joinable())
        t.join();
  }

private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> guard{mutex_};
        cv_.wait(guard, [this] { return closing_ || !jobs_.empty(); });
        if (jobs_.empty())
          return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }

  std::size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool closing_ = false;
  std::vector<std::thread> threads_;
};

// One scrape's stats, filled by the stats callback.
struct scrape {
  bool done = false;
  pb::StatsReply reply;
  error_info error;
};

// Answers 503 with a one-line reason, and logs it at debug level.
void unavailable(httplib::Response& res, const std::string& reason) {
  log::debug("metrics scrape answered 503: " + reason);
  res.status = 503;
  res.set_content(reason + "\n", "text/plain; charset=utf-8");
}

// Splits `HOST:PORT` (IPv6 hosts in brackets) into a host as getaddrinfo
// takes it and a port; the port is -1 if it is not a number up to 65535.
std::pair<std::string, int> split_address(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos)
    return {address, -1};
  auto host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  auto digits = address.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return {host, -1};
  auto port = std::stoi(digits);
  return {host, port <= 65535 ? port : -1};
}

} // namespace

// -- shared state -------------------------------------------------------------

struct metrics_server::shared_state
    : std::enable_shared_from_this<shared_state> {
  stats_source source;
  metrics_options options;
  std::chrono::milliseconds stats_timeout{0};
  // Kept alive for the OpenSSL context and the expiry metric.
  std::shared_ptr<tls_store> tls_identity;
  // An httplib::SSLServer with TLS.
  std::unique_ptr<httplib::Server> server;
  std::thread listener;
  // Guards everything below; `cv` signals each change.
  std::mutex mutex;
  std::condition_variable cv;
  bool listening = false;
  bool finished = false;
  bool stopping = false;
  // The console's API; empty without a console.
  console_handler console;
  // Scrapes inside a call of `source`: shut_down waits for them.
  std::size_t calling = 0;

  // Serves GET /metrics on an HTTP thread.
  void serve(httplib::Response& res) {
    auto job = std::make_shared<scrape>();
    {
      std::lock_guard<std::mutex> guard{mutex};
      if (stopping)
        return unavailable(res, "the broker is stopping");
      ++calling;
    }
    // Decrements `calling` even if the source throws.
    struct call_guard {
      shared_state& st;
      ~call_guard() {
        std::lock_guard<std::mutex> guard{st.mutex};
        --st.calling;
        st.cv.notify_all();
      }
    };
    {
      call_guard guard{*this};
      std::weak_ptr<shared_state> weak = weak_from_this();
      source(metrics_stats_request(options),
             [weak, job](pb::StatsReply& reply, const error_info& err) {
               auto st = weak.lock();
               if (!st)
                 return; // the server is gone; nobody waits
               std::lock_guard<std::mutex> guard{st->mutex};
               job->reply.Swap(&reply);
               job->error = err;
               job->done = true;
               st->cv.notify_all();
             });
    }
    std::unique_lock<std::mutex> lock{mutex};
    auto deadline = std::chrono::steady_clock::now() + stats_timeout;
    cv.wait_until(lock, deadline, [&] { return job->done || stopping; });
    if (!job->done)
      return unavailable(
          res, stopping ? "the broker is stopping"
                        : "the stats did not arrive within " +
                              std::to_string(stats_timeout.count()) + "ms");
    lock.unlock();
    if (job->error)
      return unavailable(res,
                         "the stats are not available: " + job->error.text);
    auto text = render_metrics(job->reply, options);
    if (tls_identity)
      text += render_tls_expiry(tls_identity->not_after());
    res.set_content(text, std::string{metrics_content_type});
  }

  // Serves a console API request on an HTTP thread, as `serve` a scrape.
  void serve_console(const httplib::Request& req, httplib::Response& res) {
    console_headers(res);
    struct answer {
      bool done = false;
      http_response response;
    };
    auto job = std::make_shared<answer>();
    auto refuse = [&res](const std::string& reason) {
      log::debug("console request answered 503: " + reason);
      res.status = 503;
      res.set_content("{\"error\":\"" + reason + "\"}\n", "application/json");
    };
    {
      std::lock_guard<std::mutex> guard{mutex};
      if (stopping)
        return refuse("the broker is stopping");
      ++calling;
    }
    {
      struct call_guard {
        shared_state& st;
        ~call_guard() {
          std::lock_guard<std::mutex> guard{st.mutex};
          --st.calling;
          st.cv.notify_all();
        }
      } guard{*this};
      std::weak_ptr<shared_state> weak = weak_from_this();
      console(console_request(req), [weak, job](http_response response) {
        auto st = weak.lock();
        if (!st)
          return; // the server is gone; nobody waits
        std::lock_guard<std::mutex> guard{st->mutex};
        job->response = std::move(response);
        job->done = true;
        st->cv.notify_all();
      });
    }
    std::unique_lock<std::mutex> lock{mutex};
    auto deadline = std::chrono::steady_clock::now() + stats_timeout;
    cv.wait_until(lock, deadline, [&] { return job->done || stopping; });
    if (!job->done)
      return refuse(stopping
                        ? "the broker is stopping"
                        : "the stats did not arrive within " +
                              std::to_string(stats_timeout.count()) + "ms");
    auto response = std::move(job->response);
    lock.unlock();
    res.status = response.status;
    res.set_content(response.body, response.content_type);
  }
};

// -- metrics_server -----------------------------------------------------------

metrics_server::metrics_server(stats_source source,
                               metrics_server_settings settings)
    : state_(std::make_shared<shared_state>()), settings_(std::move(settings)) {
  state_->source = std::move(source);
  state_->options = settings_.options;
  state_->stats_timeout = settings_.stats_timeout;
  state_->tls_identity = settings_.tls_identity;
  state_->console = settings_.console;
  if (!settings_.tls.enabled()) {
    state_->server = std::make_unique<httplib::Server>();
    return;
  }
  // httplib accepts the handshake without blocking, within the read
  // timeout; a client speaking plain HTTP fails it and is closed.
  auto* identity = settings_.tls_identity.get();
  state_->server = std::make_unique<httplib::SSLServer>(
      [identity, tls = settings_.tls](SSL_CTX& ctx) {
        return identity != nullptr ? identity->setup_ssl_context(ctx)
                                   : setup_server_ssl_context(ctx, tls);
      });
}

metrics_server::~metrics_server() {
  shut_down();
  wait_stopped(std::chrono::milliseconds(100));
}

error_info metrics_server::start() {
  auto [host, port] = split_address(settings_.listen);
  if (port < 0)
    return make_error_info(ec::invalid_request,
                           "cannot listen on " + settings_.listen +
                               ": not a HOST:PORT address");
  auto* st = state_.get();
  auto& http = *st->server;
  if (!http.is_valid())
    return make_error_info(ec::invalid_request,
                           "cannot load the TLS certificate, key or client "
                           "CA");
  // httplib turns on SO_REUSEPORT by default: a second broker on a busy
  // port would start and share it. Only SO_REUSEADDR, as gRPC's port has.
  http.set_socket_options([](socket_t sock) {
    int on = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  });
  auto io =
      static_cast<time_t>(std::max<int64_t>(1, settings_.io_timeout.count()));
  http.set_keep_alive_max_count(1); // one request per connection
  http.set_keep_alive_timeout(io);
  http.set_read_timeout(io, 0);
  http.set_write_timeout(io, 0);
  http.set_payload_max_length(4096); // GET has no body; refuse big ones
  http.Get("/metrics", [st](const httplib::Request&, httplib::Response& res) {
    st->serve(res);
  });
  if (st->console) {
    for (auto* path : {"/", "/console.js", "/charts.js", "/console.css"})
      http.Get(path, [](const httplib::Request& req, httplib::Response& res) {
        serve_console_asset(req, res);
      });
    auto api = [st](const httplib::Request& req, httplib::Response& res) {
      st->serve_console(req, res);
    };
    http.Get("/api/.*", api);
    http.Post("/api/.*", api);
  }
  const char* not_found = st->console ? "not found; the metrics are at "
                                        "/metrics, the console at /\n"
                                      : "not found; the metrics are at "
                                        "/metrics\n";
  http.set_error_handler(httplib::Server::HandlerWithResponse{
      [not_found](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled; // our reason
        res.set_content(res.status == 404 ? not_found
                                          : "the request was refused\n",
                        "text/plain; charset=utf-8");
        return httplib::Server::HandlerResponse::Handled;
      }});
  auto threads = settings_.threads;
  auto queued = settings_.max_queued;
  // httplib calls this once, from listen_after_bind, after it marked itself
  // running (so that stop() works from then on), and owns the result.
  http.new_task_queue = [st, threads, queued]() -> httplib::TaskQueue* {
    {
      std::lock_guard<std::mutex> guard{st->mutex};
      st->listening = true;
    }
    st->cv.notify_all();
    return new caller_runs_pool(threads, queued);
  };
  auto bound = port == 0 ? http.bind_to_any_port(host)
                         : (http.bind_to_port(host, port) ? port : -1);
  if (bound < 0)
    return make_error_info(ec::invalid_request,
                           cannot_listen_message(settings_.listen));
  address_ = settings_.listen.substr(0, settings_.listen.rfind(':')) + ":" +
             std::to_string(bound);
  // The thread keeps the state alive, in case it outlives this object.
  st->listener = std::thread{[keep = state_] {
    keep->server->listen_after_bind();
    std::lock_guard<std::mutex> guard{keep->mutex};
    keep->finished = true;
    keep->cv.notify_all();
  }};
  started_ = true;
  std::unique_lock<std::mutex> lock{st->mutex};
  st->cv.wait(lock, [st] { return st->listening || st->finished; });
  return {};
}

void metrics_server::shut_down() {
  std::unique_lock<std::mutex> lock{state_->mutex};
  if (state_->stopping)
    return;
  state_->stopping = true;
  state_->cv.notify_all();
  state_->cv.wait(lock, [this] { return state_->calling == 0; });
  lock.unlock();
  if (started_)
    state_->server->stop();
}

bool metrics_server::wait_stopped(std::chrono::milliseconds patience) {
  if (!started_ || stopped_)
    return true;
  auto& st = *state_;
  std::unique_lock<std::mutex> lock{st.mutex};
  if (!st.cv.wait_for(lock, patience, [&st] { return st.finished; })) {
    lock.unlock();
    st.listener.detach(); // it holds the state until it ends
    stopped_ = true;
    return false;
  }
  lock.unlock();
  st.listener.join();
  stopped_ = true;
  return true;
}

} // namespace tb
