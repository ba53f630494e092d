// The Prometheus text exposition format (version 0.0.4) of a Stats reply:
// what `GET /metrics` answers. Pure functions, no I/O; the HTTP side is
// net/metrics_server.hpp.
//
// Names follow the Prometheus conventions: a `tinybroker_` prefix, base
// units (seconds, bytes), `_total` on counters. Every family has `# HELP`
// and `# TYPE` lines; a family without samples (no groups yet) is left out.
// Per-group series carry the label `group`, per-topic series (only with
// `per_topic`) the label `topic`; label values are escaped as the format
// asks (`\` `"` and newline). docs/operations.md lists every metric.

#pragma once

#include <string>
#include <string_view>

#include "tinybroker.pb.h"

namespace tb {

/// What the metrics endpoint exposes beyond the fixed set.
struct metrics_options {
  /// Whether per-topic series are written. Off by default: topics can be
  /// many (up to `limits.max_topics`), and each adds series to every scrape.
  bool per_topic = false;
};

/// The Content-Type of the text format.
inline constexpr std::string_view metrics_content_type =
    "text/plain; version=0.0.4; charset=utf-8";

/// The most groups and topics one scrape lists (the collector's maximum).
inline constexpr uint32_t metrics_list_limit = 10000;

/// Returns the Stats request the metrics endpoint sends: every group (up to
/// `metrics_list_limit`), and every topic only with `per_topic` (else no
/// topic pattern, so that the collector skips per-topic work).
tinybroker::v1::StatsRequest
metrics_stats_request(const metrics_options& options);

/// Renders `reply` in the Prometheus text format: broker counters and
/// gauges, the delivery latency histogram, the per-group series, and the
/// per-topic series if `options.per_topic`.
std::string render_metrics(const tinybroker::v1::StatsReply& reply,
                           const metrics_options& options);

/// Renders the gauge `tinybroker_tls_certificate_expiry_timestamp_seconds`
/// with `not_after` (Unix seconds), the expiry of the server certificate
/// both listeners serve; "" if `not_after` is 0 (no TLS).
std::string render_tls_expiry(int64_t not_after);

/// Returns `value` escaped for a label value of the text format: `\` as
/// `\\`, `"` as `\"` and a newline as `\n`.
std::string escape_label_value(std::string_view value);

/// Renders the per-group series of `reply` (net/group_metrics.cpp), one
/// per group labelled `group`; "" without groups.
std::string render_group_metrics(const tinybroker::v1::StatsReply& reply);

/// Renders the per-topic series of `reply` (net/group_metrics.cpp), one
/// per topic labelled `topic`; "" without topics.
std::string render_topic_metrics(const tinybroker::v1::StatsReply& reply);

/// Renders the cluster section of Stats (net/cluster_metrics.cpp): the
/// nodes this node sees up, and one series per peer and link state.
std::string render_cluster_metrics(const tinybroker::v1::ClusterStats& c);

/// Formats `value` as the text format writes numbers: the shortest digits
/// that read back as the same double, in scientific notation only for
/// exponents below -4 or from 6 up (as the Prometheus Go client writes
/// them: `0.0001`, `5e-05`, `1.5e+06`), or `+Inf`, `-Inf`, `NaN`.
std::string format_metric_value(double value);

} // namespace tb
