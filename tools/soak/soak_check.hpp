// The checks of tinybroker-soak, on the log files its roles wrote: every
// message published to the group acked exactly once or dead-lettered,
// duplicates only as redeliveries, and a flat broker RSS. Plain C++, also
// used by the end-to-end fault tests (tests/e2e/faults_test.cpp).

#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tb::soak {

/// Packs a key `p<publisher>-<seq>` into one number; UINT64_MAX if it is
/// not a key.
uint64_t pack_key(const std::string& key);

/// What happened to the messages of a group, from the roles' logs.
class ledger {
public:
  /// Reads a publisher log (`<key> <id>` and `! <key> <reason>` lines).
  bool read_publisher_log(const std::string& path);

  /// Reads a worker log (`<key> <message id> <attempt> <a|r>` lines); a
  /// torn last line (a kill mid-write) is ignored.
  bool read_worker_log(const std::string& path);

  /// Reads a log of dead-lettered keys (one key per line; the summary
  /// line of a subscriber is skipped).
  bool read_dead_letter_log(const std::string& path);

  /// Records one accepted message by hand (for tests).
  void add_published(uint64_t key, uint64_t id) {
    published_[key] = id;
  }

  /// The outcome of the check.
  struct result {
    /// Messages the broker accepted.
    uint64_t published = 0;
    /// Messages the broker refused (publishers' confirms with an error).
    uint64_t refused = 0;
    /// Deliveries workers recorded (all attempts).
    uint64_t deliveries = 0;
    /// Accepted messages that were acked and not dead-lettered.
    uint64_t acked = 0;
    /// Accepted messages found on the dead letter topic.
    uint64_t dead_lettered = 0;
    /// Accepted messages neither acked nor dead-lettered.
    uint64_t lost = 0;
    /// Deliveries with attempt > 1: allowed, counted.
    uint64_t redeliveries = 0;
    /// Deliveries that repeated an attempt number of the same message: a
    /// duplicate that is not a redelivery (a failure).
    uint64_t duplicates = 0;
    /// Rejected messages not found on the dead letter topic (a failure).
    uint64_t rejected_not_dead_lettered = 0;
    /// Keys delivered or dead-lettered that no publisher had confirmed.
    uint64_t unknown = 0;
    /// Refused messages that came all the same: their refusal said they may
    /// or may not be taken (`node_unavailable`, e.g. a batch whose replica
    /// went before it acknowledged it; docs/cluster.md). Allowed, counted.
    uint64_t maybe_delivered = 0;
    /// Up to 5 lost keys, for the report.
    std::vector<std::string> lost_examples;

    /// True when nothing was lost, duplicated or misrouted.
    bool ok() const {
      return lost == 0 && duplicates == 0 && rejected_not_dead_lettered == 0 &&
             unknown == 0;
    }
  };

  /// Checks every accepted message against the deliveries and dead letters.
  result check() const;

private:
  // What the workers recorded of one message.
  struct record {
    uint64_t attempts_seen = 0; // bit n-1 set when attempt n was recorded
    uint32_t deliveries = 0;
    uint32_t redeliveries = 0;
    bool acked = false;
    bool rejected = false;
    bool repeated = false;
  };

  std::unordered_map<uint64_t, uint64_t> published_;
  uint64_t refused_ = 0;
  // Refused keys whose refusal said "may or may not be taken".
  std::unordered_set<uint64_t> maybe_;
  std::unordered_map<uint64_t, record> delivered_;
  std::unordered_set<uint64_t> dead_letters_;
  uint64_t dead_letter_repeats_ = 0;
};

/// One reading of the broker's resident memory.
struct rss_sample {
  /// Seconds since the load started.
  double t = 0;
  /// VmRSS in KiB.
  long long kib = 0;
};

/// The verdict on RSS over a run: after a warm-up (the first fifth of the
/// samples, at least 5 s), the median of the last third of the remaining
/// samples may exceed the median of the first third by at most
/// `max(margin_pct % of it, margin_mib MiB)`.
struct rss_verdict {
  /// The first third's median, KiB.
  long long start_kib = 0;
  /// The last third's median, KiB.
  long long end_kib = 0;
  /// The largest sample, KiB.
  long long peak_kib = 0;
  /// The growth allowed, KiB.
  long long allowed_kib = 0;
  /// False when there were too few samples to judge (then not a failure).
  bool judged = false;
  /// True when flat (or not judged).
  bool flat = true;
};

/// Judges `samples` as `rss_verdict` describes.
rss_verdict judge_rss(const std::vector<rss_sample>& samples, double margin_pct,
                      double margin_mib);

} // namespace tb::soak
