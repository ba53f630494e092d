#include "client/addresses.hpp"

#include <algorithm>
#include <random>

#include "client/check.hpp"
#include "client/reach.hpp"
#include "client/tls_diagnosis.hpp"

namespace tb::client {

namespace {

// Returns `text` without the spaces and tabs at its ends.
std::string addresses_trim(const std::string& text) {
  auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos)
    return {};
  auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

} // namespace

std::vector<std::string> split_addresses(const std::string& target) {
  std::vector<std::string> result;
  std::size_t start = 0;
  for (;;) {
    auto comma = target.find(',', start);
    auto part = addresses_trim(target.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start));
    if (part.empty())
      throw invalid_request(grpc::Status{
          grpc::StatusCode::INVALID_ARGUMENT,
          target.find_first_not_of(" \t,") == std::string::npos
              ? "no broker address in \"" + target +
                    "\"; expected HOST:PORT, or several joined by commas"
              : "an empty broker address in \"" + target +
                    "\"; expected HOST:PORT entries joined by commas"});
    result.push_back(std::move(part));
    if (comma == std::string::npos)
      return result;
    start = comma + 1;
  }
}

std::string join_addresses(const std::vector<std::string>& addresses) {
  std::string text;
  for (auto& address : addresses)
    text += (text.empty() ? "" : ", ") + address;
  return text;
}

void shuffle_addresses(std::vector<std::string>& addresses) {
  std::random_device device;
  std::mt19937 gen{device()};
  std::shuffle(addresses.begin(), addresses.end(), gen);
}

connect_any_result connect_any(const std::vector<std::string>& addresses,
                               const security_options& security,
                               const std::string& client_name,
                               std::chrono::milliseconds timeout) {
  connect_any_result result;
  for (auto& address : addresses) {
    auto conn = std::make_unique<connection>(address, security, client_name);
    auto outcome = wait_reachable(*conn->channel(), timeout);
    if (outcome == reach_outcome::connected) {
      result.conn = std::move(conn);
      result.address = address;
      result.failures.clear();
      return result;
    }
    result.failures.push_back(explain_unreachable(conn->channel(), address,
                                                  security, outcome, timeout));
  }
  return result;
}

std::string
describe_connect_failures(const std::vector<std::string>& addresses,
                          const std::vector<std::string>& failures) {
  if (failures.size() == 1)
    return failures.front();
  auto text = "cannot connect to any of the " +
              std::to_string(addresses.size()) + " brokers at " +
              join_addresses(addresses) + ":";
  for (auto& failure : failures)
    text += "\n  " + failure;
  return text;
}

} // namespace tb::client
