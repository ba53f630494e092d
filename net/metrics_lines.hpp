// The lines of the Prometheus text format as /metrics writes them, shared
// by the files that render its sections (metrics_format.cpp,
// group_metrics.cpp, cluster_metrics.cpp). Internal to net/.

#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "net/metrics_format.hpp"

namespace tb::metrics_lines {

/// Appends the `# HELP` and `# TYPE` lines of family `name` (help texts are
/// constants here, with nothing to escape).
inline void header(std::string& out, std::string_view name,
                   std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

/// Appends one sample line; `labels` is empty or `{...}`.
inline void sample(std::string& out, std::string_view name,
                   std::string_view labels, const std::string& value) {
  out.append(name).append(labels).append(" ").append(value).append("\n");
}

/// Returns `{name="value"}` with the value escaped.
inline std::string one_label(std::string_view name, std::string_view value) {
  return std::string{"{"}
      .append(name)
      .append("=\"")
      .append(escape_label_value(value))
      .append("\"}");
}

/// Formats a count: integers as integers, so that large counters keep every
/// digit in the text.
inline std::string count(uint64_t n) {
  return std::to_string(n);
}

/// Converts milliseconds to the seconds the metrics are in.
inline std::string seconds(uint64_t ms) {
  return format_metric_value(static_cast<double>(ms) / 1000.0);
}

} // namespace tb::metrics_lines
