// Reads Prometheus text with the official parser (python3-prometheus-client,
// through tests/net/parse_metrics.py), so that tests check the metrics the
// way a scraper reads them, not only as text.

#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace tb::test {

/// What prometheus_client's parser read from a text.
struct parsed_metrics {
  /// True if the parser accepted the text.
  bool ok = false;
  /// What the script wrote: its error if it refused the text.
  std::string output;
  /// The type of each family, by family name (the parser drops `_total`
  /// from the names of counter families).
  std::map<std::string, std::string> types;
  /// Each sample's value, by `NAME LABELS` (LABELS as JSON, sorted keys).
  std::map<std::string, double> samples;

  /// Returns the value of sample `name` with `labels` (a JSON object with
  /// sorted keys and no spaces, like `{"group":"w"}`), if there is one.
  std::optional<double> value(const std::string& name,
                              const std::string& labels = "{}") const {
    auto i = samples.find(name + " " + labels);
    if (i == samples.end())
      return std::nullopt;
    return i->second;
  }

  /// Returns the number of samples named `name`, whatever their labels.
  std::size_t count(const std::string& name) const {
    std::size_t n = 0;
    for (auto i = samples.lower_bound(name + " "); i != samples.end(); ++i) {
      if (i->first.compare(0, name.size() + 1, name + " ") != 0)
        break;
      ++n;
    }
    return n;
  }
};

/// Parses `text` with prometheus_client's `text_string_to_metric_families`.
inline parsed_metrics parse_with_prometheus_client(const std::string& text) {
  parsed_metrics result;
  char path[] = "/tmp/tinybroker-metrics-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return result;
  close(fd);
  std::ofstream{path} << text;
  std::string command = std::string{TINYBROKER_PYTHON3} + " " +
                        TINYBROKER_PARSE_METRICS_SCRIPT + " < " + path +
                        " 2>&1";
  auto* pipe = popen(command.c_str(), "r");
  if (pipe != nullptr) {
    char buf[4096];
    std::size_t n = 0;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0)
      result.output.append(buf, n);
    auto status = pclose(pipe);
    result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  unlink(path);
  std::istringstream lines{result.output};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields{line};
    std::string kind, name, second, value;
    std::getline(fields, kind, '\t');
    std::getline(fields, name, '\t');
    std::getline(fields, second, '\t');
    if (kind == "family") {
      result.types[name] = second;
    } else if (kind == "sample") {
      std::getline(fields, value, '\t');
      result.samples[name + " " + second] = std::strtod(value.c_str(), nullptr);
    }
  }
  return result;
}

} // namespace tb::test
