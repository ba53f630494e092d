// Several broker addresses for one client (issue 30, point 5): the nodes of
// a cluster, or independent brokers to fail over between. A target is one
// `HOST:PORT` or several joined by commas ("10.0.0.1:7400,10.0.0.2:7400"),
// as NATS's `Connect("nats://a,nats://b")` takes them.

#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "client/connection.hpp"
#include "client/security.hpp"

namespace tb::client {

/// Splits `target` at its commas into addresses, trimming spaces around
/// each. Throws `invalid_request` naming the problem when it names none or
/// one of them is empty ("a,,b").
std::vector<std::string> split_addresses(const std::string& target);

/// Returns `addresses` joined by ", " (for messages that name them all).
std::string join_addresses(const std::vector<std::string>& addresses);

/// Shuffles `addresses` (what NATS clients do unless told `NoRandomize`:
/// clients given the same list spread over the nodes).
void shuffle_addresses(std::vector<std::string>& addresses);

/// The result of `connect_any`.
struct connect_any_result {
  /// The connection to the first reachable address; null when none was.
  std::unique_ptr<connection> conn;
  /// The address it is connected to.
  std::string address;
  /// When none was reachable: one sentence per address tried, in order,
  /// each starting "cannot connect to the broker at ADDRESS" and naming the
  /// likely cause (see `explain_unreachable`).
  std::vector<std::string> failures;
};

/// Tries `addresses` in order, waiting at most `timeout` for each (a
/// refused connection fails within milliseconds, so the next is tried at
/// once), and returns a connection to the first that answers, made with
/// `security` and named `client_name`. Throws `security_error` or
/// `invalid_request` as `connection`'s constructor does.
connect_any_result connect_any(const std::vector<std::string>& addresses,
                               const security_options& security,
                               const std::string& client_name,
                               std::chrono::milliseconds timeout);

/// Returns the one sentence of a failed `connect_any`: the failure itself
/// for one address, else "cannot connect to any of the N brokers at A, B:
/// " followed by each address's sentence.
std::string describe_connect_failures(const std::vector<std::string>& addresses,
                                      const std::vector<std::string>& failures);

} // namespace tb::client
