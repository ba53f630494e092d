#include "tools/cli/text_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tb::cli {

namespace {

// Returns `format` applied to the arguments (snprintf into a string).
template <class... Ts>
std::string printf_string(const char* format, Ts... args) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

// Returns `n` as two digits, with a leading zero.
std::string two_digits(uint64_t n) {
  return printf_string("%02llu", static_cast<unsigned long long>(n));
}

} // namespace

text_table::text_table(std::vector<std::string> headers,
                       std::size_t left_columns)
    : rows_{std::move(headers)}, left_columns_(left_columns) {}

void text_table::add_row(std::vector<std::string> cells) {
  if (cells.size() != rows_.front().size())
    throw std::logic_error("text_table: a row with the wrong number of cells");
  rows_.push_back(std::move(cells));
}

void text_table::print(std::ostream& out) const {
  std::vector<std::size_t> widths(rows_.front().size(), 0);
  for (auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], row[i].size());
  for (auto& row : rows_) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i != 0)
        line += "  ";
      std::string pad(widths[i] - row[i].size(), ' ');
      line += i < left_columns_ ? row[i] + pad : pad + row[i];
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }
}

std::string format_elapsed(uint64_t ms) {
  if (ms < 1000)
    return std::to_string(ms) + "ms";
  auto s = ms / 1000;
  if (s < 60)
    return std::to_string(s) + "." + std::to_string(ms / 100 % 10) + "s";
  if (s < 3600)
    return std::to_string(s / 60) + "m" + two_digits(s % 60) + "s";
  if (s < 86400)
    return std::to_string(s / 3600) + "h" + two_digits(s / 60 % 60) + "m";
  return std::to_string(s / 86400) + "d" + two_digits(s / 3600 % 24) + "h";
}

std::string format_age(uint64_t ms) {
  return ms == 0 ? "-" : format_elapsed(ms);
}

std::string format_rate(double per_second) {
  if (!std::isfinite(per_second) || per_second <= 0)
    return "0";
  if (per_second < 100)
    return printf_string("%.1f", per_second);
  return printf_string("%.0f", per_second);
}

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + "B";
  auto value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  for (; value >= 1024 && unit + 1 < std::size(units); ++unit)
    value /= 1024;
  return printf_string("%.1f%s", value, units[unit]);
}

std::string format_latency(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  if (seconds < 1e-3)
    return printf_string("%.0fus", seconds * 1e6);
  if (seconds < 1)
    return printf_string("%.2fms", seconds * 1e3);
  return printf_string("%.2fs", seconds);
}

} // namespace tb::cli
