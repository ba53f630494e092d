// Why an address cannot be listened on, in words an operator can act on.

#pragma once

#include <string>

namespace tb {

/// Tries to bind a TCP socket to `address` (`HOST:PORT`, IPv6 hosts in
/// brackets) the way a listener would, without port reuse, and releases it
/// again. Returns an empty string if the bind succeeds, else the reason in
/// lower case, e.g. "address already in use" or "cannot resolve host".
///
/// Listeners call this to explain a failed start: gRPC only says that it
/// could not bind, not why.
std::string bind_problem(const std::string& address);

/// Returns the one message every listening program prints when `address`
/// cannot be bound: `cannot listen on ADDRESS: REASON`.
std::string cannot_listen_message(const std::string& address);

} // namespace tb
