// Text output for people: aligned tables and the short forms of ages,
// rates, byte counts and latencies that `stats` and `groups ls` print.

#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace tb::cli {

/// A table printed with each column as wide as its widest cell, columns
/// two spaces apart. The first `left_columns` columns (names) align left,
/// the others (numbers) right.
class text_table {
public:
  /// Creates a table with the column titles `headers`.
  explicit text_table(std::vector<std::string> headers,
                      std::size_t left_columns = 1);

  /// Adds a row; it must have one cell per column.
  void add_row(std::vector<std::string> cells);

  /// Returns true if no row was added.
  bool empty() const {
    return rows_.size() == 1;
  }

  /// Writes the header line and every row, each line ending in a newline;
  /// trailing blanks are left off.
  void print(std::ostream& out) const;

private:
  std::vector<std::vector<std::string>> rows_;
  std::size_t left_columns_;
};

/// Formats a span of milliseconds for people: "850ms", "12.3s", "5m03s",
/// "2h05m", "3d04h".
std::string format_elapsed(uint64_t ms);

/// Formats an age in milliseconds as `format_elapsed` does, but 0 (nothing
/// waiting) as "-".
std::string format_age(uint64_t ms);

/// Formats a rate per second: "0", "0.5", "12.5", "1234".
std::string format_rate(double per_second);

/// Formats a byte count for people: "512B", "1.5KiB", "45.2MiB", "1.1GiB".
std::string format_bytes(uint64_t bytes);

/// Formats a latency in seconds: "850us", "1.25ms", "2.50s".
std::string format_latency(double seconds);

} // namespace tb::cli
