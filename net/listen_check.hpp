// Why an address cannot be listened on, in words an operator can act on;
// and the warnings the broker logs at start when a listener is reachable
// from other hosts without the protection spec 10 offers (TLS, auth).

#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/broker_config.hpp"

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

/// Returns true if `host` (the HOST of a listen address; IPv6 in brackets
/// or not) is a loopback address: `localhost`, 127.0.0.0/8 or `::1` (also
/// as `::ffff:127.x.y.z`). Any other name counts as reachable from outside.
bool is_loopback_host(std::string_view host);

/// Returns the HOST part of a listen address `HOST:PORT`.
std::string_view host_of(std::string_view address);

/// Returns the warnings for `cfg`, one line each, in this order: the gRPC
/// listener on a non-loopback address without TLS (`... traffic and tokens
/// travel in clear text ...`); the metrics listener likewise; the gRPC
/// listener on a non-loopback address with auth off (`anyone who reaches
/// ... may publish, subscribe and delete groups`).
std::vector<std::string> exposure_warnings(const broker_config& cfg);

} // namespace tb
