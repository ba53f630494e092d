#include "tests/cluster/cluster_workload.hpp"

#include <algorithm>

#include "client/connection.hpp"
#include "client/session.hpp"
#include "tinybroker.pb.h"

namespace tb::test {

namespace {

using namespace std::chrono_literals;
using workload_clock = std::chrono::steady_clock;

/// How long a client waits before it tries its next node.
constexpr auto workload_retry = 100ms;

} // namespace

std::string workload_result::summary() const {
  std::string s =
      "confirmed " + std::to_string(confirmed) + ", refused " +
      std::to_string(refused) + ", deliveries " + std::to_string(deliveries) +
      ", lost " + std::to_string(lost) + ", duplicates " +
      std::to_string(duplicates) +
      " (attempt > 1: " + std::to_string(redeliveries) +
      ", same attempt again: " + std::to_string(same_attempt) + "), unknown " +
      std::to_string(unknown) + ", longest confirm gap " +
      std::to_string(longest_confirm_gap_ms) + " ms";
  for (auto& [why, n] : refusals)
    s += "; refused " + std::to_string(n) + "x: " + why;
  for (auto& key : lost_examples)
    s += "; lost " + key;
  return s;
}

cluster_workload::cluster_workload(workload_options options)
    : options_(std::move(options)) {
  // nop
}

cluster_workload::~cluster_workload() {
  stop();
}

void cluster_workload::set_address(const std::string& name,
                                   const std::string& address) {
  std::lock_guard<std::mutex> guard{mtx_};
  book_[name] = address;
}

void cluster_workload::use_nodes(std::vector<std::string> publisher_nodes,
                                 std::vector<std::string> worker_nodes) {
  publisher_nodes_ = std::move(publisher_nodes);
  worker_nodes_ = std::move(worker_nodes);
}

std::string cluster_workload::address_of(const std::vector<std::string>& names,
                                         size_t& at) {
  std::lock_guard<std::mutex> guard{mtx_};
  for (size_t i = 0; i < names.size(); ++i, ++at) {
    auto& address = book_[names[at % names.size()]];
    if (!address.empty())
      return address;
  }
  return {};
}

void cluster_workload::start() {
  publishing_ = true;
  running_ = true;
  for (int i = 0; i < options_.publishers; ++i)
    threads_.emplace_back([this, i] { publisher_loop(i); });
  for (int i = 0; i < options_.workers; ++i)
    threads_.emplace_back([this, i] { worker_loop(i); });
}

void cluster_workload::stop_publishing() {
  publishing_ = false;
}

void cluster_workload::stop() {
  publishing_ = false;
  running_ = false;
  for (auto& t : threads_)
    if (t.joinable())
      t.join();
  threads_.clear();
}

void cluster_workload::publisher_loop(int index) {
  size_t at = static_cast<size_t>(index);
  uint64_t seq = 0;
  auto per_batch =
      std::chrono::duration<double>(options_.batch / options_.rate);
  auto start = workload_clock::now();
  std::string address;
  std::unique_ptr<client::connection> conn;
  std::vector<client::outgoing_message> batch;
  std::vector<tinybroker::v1::PublishResult> results;
  for (uint64_t n = 0; publishing_; ++n) {
    if (!conn) {
      address = address_of(publisher_nodes_, at);
      if (address.empty()) {
        std::this_thread::sleep_for(workload_retry);
        continue;
      }
      conn = std::make_unique<client::connection>(address);
    }
    batch.clear();
    for (int i = 0; i < options_.batch; ++i, ++seq) {
      auto key = "p" + std::to_string(index) + "-" + std::to_string(seq);
      batch.push_back(
          {options_.prefix + "." + std::to_string(index), key, {}, {}});
    }
    results.clear();
    auto status = conn->publish(batch, &results, 5s);
    auto now = workload_clock::now();
    {
      std::lock_guard<std::mutex> guard{mtx_};
      for (size_t i = 0; i < batch.size(); ++i) {
        bool ok = status.ok() && i < results.size() && !results[i].has_error();
        sent_[batch[i].payload] = ok;
        if (ok) {
          if (last_confirm_ != workload_clock::time_point{})
            longest_gap_ms_ = std::max<long long>(
                longest_gap_ms_,
                std::chrono::duration_cast<std::chrono::milliseconds>(
                    now - last_confirm_)
                    .count());
          last_confirm_ = now;
          continue;
        }
        auto why = !status.ok()         ? "call: " + status.error_message()
                   : i < results.size() ? results[i].error().reason() + ": " +
                                              results[i].error().message()
                                        : std::string{"no result"};
        ++refusals_[why.substr(0, 160)];
      }
    }
    if (!status.ok()) {
      // Its node is gone (or going): the next node of the list.
      conn.reset();
      ++at;
      std::this_thread::sleep_for(workload_retry);
      continue;
    }
    auto due = start + std::chrono::duration_cast<workload_clock::duration>(
                           per_batch * static_cast<double>(n + 1));
    if (due > workload_clock::now())
      std::this_thread::sleep_until(due);
  }
}

void cluster_workload::worker_loop(int index) {
  size_t at = static_cast<size_t>(index);
  while (running_) {
    auto address = address_of(worker_nodes_, at);
    if (address.empty()) {
      std::this_thread::sleep_for(workload_retry);
      continue;
    }
    client::connection conn{address};
    auto session = conn.open_session("worker-" + std::to_string(index));
    if (!session->join(1, options_.group, options_.pattern,
                       options_.max_in_flight) ||
        !session->wait_for(tinybroker::v1::ServerFrame::kSubscribed, 3s)) {
      session->cancel();
      ++at;
      std::this_thread::sleep_for(workload_retry);
      continue;
    }
    while (running_) {
      if (holding_) {
        std::this_thread::sleep_for(10ms);
        continue;
      }
      auto frame = session->next(100ms);
      if (!frame) {
        if (session->ended())
          break;
        continue;
      }
      if (frame->has_unsubscribed())
        break; // the group went away here: join again
      if (!frame->has_deliveries())
        continue;
      std::vector<uint64_t> ids;
      {
        std::lock_guard<std::mutex> guard{mtx_};
        auto now = workload_clock::now(); // under the lock: times sorted
        for (auto& d : frame->deliveries().deliveries()) {
          ids.push_back(d.delivery_id());
          auto& r = delivered_[d.payload()];
          ++r.count;
          ++deliveries_;
          delivery_times_.push_back(now);
          auto bit = d.attempt() >= 1 && d.attempt() <= 64
                         ? uint64_t{1} << (d.attempt() - 1)
                         : 0;
          if ((r.attempts_seen & bit) != 0)
            r.same_attempt = true;
          r.attempts_seen |= bit;
        }
      }
      session->ack(ids);
    }
    session->cancel();
    ++at;
    std::this_thread::sleep_for(workload_retry);
  }
}

bool cluster_workload::drain(std::chrono::milliseconds timeout,
                             std::chrono::milliseconds quiet) {
  auto deadline = workload_clock::now() + timeout;
  while (workload_clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      bool all = true;
      for (auto& [key, confirmed] : sent_)
        if (confirmed && delivered_.count(key) == 0) {
          all = false;
          break;
        }
      auto last = delivery_times_.empty() ? workload_clock::time_point{}
                                          : delivery_times_.back();
      if (all && workload_clock::now() - last >= quiet)
        return true;
    }
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

workload_result cluster_workload::check() const {
  std::lock_guard<std::mutex> guard{mtx_};
  workload_result r;
  r.longest_confirm_gap_ms = longest_gap_ms_;
  r.refusals = refusals_;
  r.deliveries = deliveries_;
  for (auto& [key, confirmed] : sent_) {
    if (!confirmed) {
      ++r.refused;
      continue;
    }
    ++r.confirmed;
    if (delivered_.count(key) == 0) {
      ++r.lost;
      if (r.lost_examples.size() < 5)
        r.lost_examples.push_back(key);
    }
  }
  for (auto& [key, rec] : delivered_) {
    if (sent_.count(key) == 0)
      ++r.unknown;
    r.duplicates += rec.count - 1;
    if (rec.same_attempt)
      ++r.same_attempt;
    // Every attempt seen beyond the first said it was one.
    for (uint32_t a = 2; a <= 64; ++a)
      if ((rec.attempts_seen & (uint64_t{1} << (a - 1))) != 0)
        ++r.redeliveries;
  }
  return r;
}

uint64_t cluster_workload::confirmed() const {
  std::lock_guard<std::mutex> guard{mtx_};
  uint64_t n = 0;
  for (auto& [key, confirmed] : sent_)
    n += confirmed ? 1 : 0;
  return n;
}

uint64_t cluster_workload::deliveries() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return deliveries_;
}

workload_clock::time_point
cluster_workload::first_delivery_after(workload_clock::time_point t,
                                       bool* found) const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = std::lower_bound(delivery_times_.begin(), delivery_times_.end(), t);
  *found = i != delivery_times_.end();
  return *found ? *i : t;
}

} // namespace tb::test
