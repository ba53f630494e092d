// The warnings the broker logs at start when a listener is reachable from
// other hosts without the protection spec 10 offers: no TLS, or no auth.

#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/broker_config.hpp"

namespace tb {

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
