#include "tools/soak/soak_check.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tb::soak {

namespace {

// Bits of a packed key that hold the sequence number.
constexpr int seq_bits = 40;

// Returns the median of `values` (which it sorts).
long long median(std::vector<long long> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Returns the key a packed key stands for.
std::string unpack_key(uint64_t packed) {
  return "p" + std::to_string(packed >> seq_bits) + "-" +
         std::to_string(packed & ((uint64_t{1} << seq_bits) - 1));
}

} // namespace

uint64_t pack_key(const std::string& key) {
  auto dash = key.find('-');
  if (key.size() < 3 || key[0] != 'p' || dash == std::string::npos ||
      dash + 1 >= key.size())
    return UINT64_MAX;
  char* end = nullptr;
  auto pub = std::strtoull(key.c_str() + 1, &end, 10);
  if (end != key.c_str() + dash)
    return UINT64_MAX;
  auto seq = std::strtoull(key.c_str() + dash + 1, &end, 10);
  if (*end != '\0' || pub >= (uint64_t{1} << 20) ||
      seq >= (uint64_t{1} << seq_bits))
    return UINT64_MAX;
  return (pub << seq_bits) | seq;
}

bool ledger::read_publisher_log(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    return false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields{line};
    std::string first, second;
    if (!(fields >> first >> second))
      continue;
    if (first == "!") {
      ++refused_;
      std::string reason;
      if ((fields >> reason) && reason == "node_unavailable")
        maybe_.insert(pack_key(second));
      continue;
    }
    auto key = pack_key(first);
    if (key != UINT64_MAX)
      published_[key] = std::strtoull(second.c_str(), nullptr, 10);
  }
  return true;
}

bool ledger::read_worker_log(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    return false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields{line};
    std::string key, kind;
    uint64_t id = 0;
    uint32_t attempt = 0;
    if (!(fields >> key >> id >> attempt >> kind) ||
        (kind != "a" && kind != "r") || attempt == 0)
      continue;
    auto packed = pack_key(key);
    auto& rec = delivered_[packed];
    uint64_t bit = attempt <= 64 ? uint64_t{1} << (attempt - 1) : 0;
    if (rec.attempts_seen & bit)
      rec.repeated = true;
    rec.attempts_seen |= bit;
    ++rec.deliveries;
    if (attempt > 1)
      ++rec.redeliveries;
    if (kind == "a")
      rec.acked = true;
    else
      rec.rejected = true;
  }
  return true;
}

bool ledger::read_dead_letter_log(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    return false;
  std::string line;
  while (std::getline(in, line)) {
    auto packed = pack_key(line);
    if (packed == UINT64_MAX)
      continue;
    if (!dead_letters_.insert(packed).second)
      ++dead_letter_repeats_;
  }
  return true;
}

ledger::result ledger::check() const {
  result r;
  r.published = published_.size();
  r.refused = refused_;
  r.duplicates = dead_letter_repeats_;
  for (auto& [key, rec] : delivered_) {
    r.deliveries += rec.deliveries;
    r.redeliveries += rec.redeliveries;
    if (rec.repeated)
      ++r.duplicates;
    if (published_.count(key) == 0)
      ++(maybe_.count(key) != 0 ? r.maybe_delivered : r.unknown);
    if (rec.rejected && dead_letters_.count(key) == 0)
      ++r.rejected_not_dead_lettered;
  }
  for (auto key : dead_letters_)
    if (published_.count(key) == 0 && maybe_.count(key) == 0)
      ++r.unknown;
  for (auto& [key, id] : published_) {
    if (dead_letters_.count(key) != 0) {
      ++r.dead_lettered;
      continue;
    }
    auto it = delivered_.find(key);
    if (it != delivered_.end() && it->second.acked) {
      ++r.acked;
      continue;
    }
    ++r.lost;
    if (r.lost_examples.size() < 5)
      r.lost_examples.push_back(unpack_key(key) + " (id " + std::to_string(id) +
                                ")");
  }
  return r;
}

rss_verdict judge_rss(const std::vector<rss_sample>& samples, double margin_pct,
                      double margin_mib) {
  rss_verdict v;
  for (auto& s : samples)
    v.peak_kib = std::max(v.peak_kib, s.kib);
  if (samples.empty())
    return v;
  auto warm_up = std::max(5.0, samples.back().t / 5);
  std::vector<long long> kept;
  for (auto& s : samples)
    if (s.t >= warm_up && s.kib > 0)
      kept.push_back(s.kib);
  auto third = kept.size() / 3;
  if (third < 3) {
    v.start_kib = samples.front().kib;
    v.end_kib = samples.back().kib;
    return v;
  }
  v.start_kib = median({kept.begin(), kept.begin() + third});
  v.end_kib = median({kept.end() - third, kept.end()});
  v.allowed_kib = static_cast<long long>(
      std::max(static_cast<double>(v.start_kib) * margin_pct / 100.0,
               margin_mib * 1024.0));
  v.judged = true;
  v.flat = v.end_kib - v.start_kib <= v.allowed_kib;
  return v;
}

} // namespace tb::soak
