// The child roles of tinybroker-soak: publisher, fan-out subscriber and
// group worker. Each appends its records to a log file with one write per
// batch, so a SIGKILL loses at most a batch that was never answered.

#include <atomic>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "client/connection.hpp"
#include "tools/soak/soak.hpp"

namespace tb::soak {

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// The subscription id of every role's one subscription.
constexpr uint64_t subscription_id = 1;

std::atomic<bool> stop_flag{false};

void on_stop(int) {
  stop_flag.store(true);
}

// Opens `path` for appending; -1 on error (reported).
int open_log(const std::string& path) {
  auto fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    std::fprintf(stderr, "tinybroker-soak: cannot open %s: %s\n", path.c_str(),
                 std::strerror(errno));
  return fd;
}

// Creates `path` (if not empty) to say the role is ready.
void mark_ready(const std::string& path) {
  if (!path.empty())
    std::ofstream{path} << "ready\n";
}

// Opens a session on `conn`, subscribes (joins `group` if not empty) and
// waits up to 20 s for the Subscribed frame; nothing on failure.
std::unique_ptr<client::session> subscribe(client::connection& conn,
                                           const role_config& cfg,
                                           const std::string& group) {
  if (!conn.wait_connected(20s))
    return nullptr;
  auto session = conn.open_session();
  bool sent = group.empty() ? session->subscribe(subscription_id, cfg.pattern)
                            : session->join(subscription_id, group, cfg.pattern,
                                            cfg.max_in_flight);
  std::vector<pb::ServerFrame> skipped;
  if (!sent || !session->wait_for(pb::ServerFrame::kSubscribed, 20s, &skipped))
    return nullptr;
  return session;
}

} // namespace

std::string key_of(const std::string& payload) {
  return payload.substr(0, payload.find(' '));
}

uint64_t seq_of(const std::string& key) {
  auto dash = key.find('-');
  if (key.empty() || key[0] != 'p' || dash == std::string::npos)
    return UINT64_MAX;
  return std::strtoull(key.c_str() + dash + 1, nullptr, 10);
}

uint64_t publisher_of(const std::string& key) {
  if (key.empty() || key[0] != 'p' || key.find('-') == std::string::npos)
    return UINT64_MAX;
  return std::strtoull(key.c_str() + 1, nullptr, 10);
}

bool is_loopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address.rfind("localhost:", 0) == 0 ||
         address.rfind("[::1]:", 0) == 0;
}

void install_stop_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

bool stopping() {
  return stop_flag.load();
}

bool append(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

int run_publisher(const role_config& cfg) {
  auto fd = open_log(cfg.log);
  if (fd < 0)
    return exit_usage;
  client::connection conn{cfg.server, client::security_from_env()};
  if (!conn.wait_connected(20s))
    return exit_usage;
  auto start = clock_type::now();
  auto end = start + cfg.duration;
  auto per_batch = std::chrono::duration<double>(cfg.batch / cfg.rate);
  uint64_t seq = 0;
  int failures = 0;
  std::vector<client::outgoing_message> batch;
  std::vector<pb::PublishResult> results;
  for (uint64_t n = 0; clock_type::now() < end && !stopping(); ++n) {
    batch.clear();
    for (unsigned i = 0; i < cfg.batch; ++i, ++seq) {
      auto key = "p" + std::to_string(cfg.index) + "-" + std::to_string(seq);
      auto payload = key + " ";
      payload.resize(std::max(cfg.size, payload.size()), 'x');
      auto topic = cfg.topic_prefix + "." + std::to_string(cfg.index) + "." +
                   std::to_string(seq % 4);
      batch.push_back({std::move(topic), std::move(payload), {}, {}});
    }
    auto status = conn.publish(batch, &results, 10s);
    if (!status.ok() || results.size() != batch.size()) {
      std::fprintf(stderr, "tinybroker-soak: publish failed: %s\n",
                   status.error_message().c_str());
      if (++failures > 10)
        return exit_failed;
      continue;
    }
    std::string lines;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      auto key = key_of(batch[i].payload);
      if (results[i].has_error())
        lines += "! " + key + " " + results[i].error().reason() + "\n";
      else
        lines += key + " " + std::to_string(results[i].id()) + "\n";
    }
    append(fd, lines);
    // Pacing: the next batch is due at start + (n + 1) * per_batch.
    auto due = start + std::chrono::duration_cast<clock_type::duration>(
                           per_batch * static_cast<double>(n + 1));
    if (due > clock_type::now())
      std::this_thread::sleep_until(std::min(due, end));
  }
  ::close(fd);
  return exit_ok;
}

int run_subscriber(const role_config& cfg, bool record_keys) {
  auto fd = open_log(cfg.log);
  if (fd < 0)
    return exit_usage;
  client::connection conn{cfg.server, client::security_from_env()};
  auto session = subscribe(conn, cfg, "");
  if (!session)
    return exit_usage;
  mark_ready(cfg.ready_file);
  uint64_t received = 0, dropped = 0, out_of_order = 0;
  std::map<uint64_t, uint64_t> last_seq;
  bool ended = false;
  while (!stopping()) {
    auto frame = session->next(200ms);
    if (!frame) {
      if ((ended = session->ended()))
        break;
      continue;
    }
    if (frame->has_dropped())
      dropped += frame->dropped().count();
    if (!frame->has_deliveries())
      continue;
    std::string lines;
    for (auto& d : frame->deliveries().deliveries()) {
      ++received;
      auto key = key_of(d.payload());
      if (record_keys)
        lines += key + "\n";
      auto pub = publisher_of(key);
      auto seq = seq_of(key);
      auto [it, fresh] = last_seq.emplace(pub, seq);
      if (!fresh) {
        if (seq <= it->second)
          ++out_of_order;
        it->second = seq;
      }
    }
    if (!lines.empty())
      append(fd, lines);
  }
  append(fd, "received " + std::to_string(received) + " dropped " +
                 std::to_string(dropped) + " out_of_order " +
                 std::to_string(out_of_order) + " ended " +
                 std::to_string(ended ? 1 : 0) + "\n");
  session->close(2s);
  ::close(fd);
  return ended ? exit_failed : exit_ok;
}

int run_worker(const role_config& cfg) {
  auto fd = open_log(cfg.log);
  if (fd < 0)
    return exit_usage;
  client::connection conn{cfg.server, client::security_from_env()};
  auto session = subscribe(conn, cfg, cfg.group);
  if (!session)
    return exit_usage;
  mark_ready(cfg.ready_file);
  uint64_t handled = 0;
  while (!stopping()) {
    auto frame = session->next(200ms);
    if (!frame) {
      if (session->ended())
        return exit_failed;
      continue;
    }
    if (!frame->has_deliveries())
      continue;
    auto& all = frame->deliveries().deliveries();
    auto size = static_cast<std::size_t>(all.size());
    bool armed = cfg.die_at != die_point::none && handled >= cfg.die_after;
    if (armed && cfg.die_at == die_point::delivery)
      raise(SIGKILL);
    // With die_at = batch, only the first half of this frame is answered.
    auto count =
        armed && cfg.die_at == die_point::batch && size > 1 ? size / 2 : size;
    std::string lines;
    std::vector<uint64_t> acks, rejects;
    for (std::size_t i = 0; i < count; ++i) {
      auto& d = all[static_cast<int>(i)];
      auto key = key_of(d.payload());
      bool reject = cfg.reject_every > 0 && seq_of(key) % cfg.reject_every == 7;
      (reject ? rejects : acks).push_back(d.delivery_id());
      lines += key + " " + std::to_string(d.message_id()) + " " +
               std::to_string(d.attempt()) + (reject ? " r\n" : " a\n");
    }
    // The work: a kill now leaves the whole frame unanswered.
    if (cfg.work.count() > 0)
      std::this_thread::sleep_for(cfg.work * count);
    // Record first, then answer: a kill in between redelivers the message,
    // which the checker counts as a redelivery.
    append(fd, lines);
    if ((!acks.empty() && !session->ack(acks)) ||
        (!rejects.empty() && !session->reject(rejects)))
      return exit_failed;
    handled += count;
    if (armed && (cfg.die_at == die_point::ack ||
                  (cfg.die_at == die_point::batch && count < size)))
      raise(SIGKILL);
  }
  session->close(2s);
  ::close(fd);
  return exit_ok;
}

} // namespace tb::soak
